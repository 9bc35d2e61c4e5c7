import type { NatsConnection } from "@nats-io/transport-node";
import type { ClientConfig } from "pg";
import type { Logger } from "pino";
import type { RowDecider } from "../../exports/row-decider";
import type { DecisionService } from "../../ports/decision-service";
import type { PushdownTarget } from "./analysis/pushdown";
import { VerdictTable } from "./verdict-table";
import { VerdictWatch, type PushdownVerdicts } from "./verdict-watch";

/**
 * A pushdown export's verdict tables on its serving node, one per database its clients use,
 * started when a session first asks for that database and told of every user and configuration
 * change.
 */
export class VerdictTables implements PushdownVerdicts {
  private readonly tables = new Map<string, { table: VerdictTable; watch: VerdictWatch }>();
  private readonly unsubscribe: Array<() => void>;

  constructor(
    private readonly settings: {
      target: PushdownTarget;
      connection: Pick<ClientConfig, "host" | "port" | "user" | "password" | "ssl">;
      decider: RowDecider;
      decisions: DecisionService;
      nc: NatsConnection;
      log: Logger;
    },
  ) {
    const { decisions } = settings;
    this.unsubscribe = [
      decisions.onUserChange((userId) => this.each((table) => table.userChanged(userId))),
      decisions.onUsersReset(() => this.each((table) => table.rebuild())),
      decisions.onPolicyChange(() => this.each((table) => table.rebuild())),
    ];
  }

  of(database: string): VerdictWatch {
    let entry = this.tables.get(database);
    if (!entry) {
      const watch = new VerdictWatch();
      const table = new VerdictTable({ ...this.settings, database });
      table.onState((state) => watch.set(state));
      entry = { table, watch };
      this.tables.set(database, entry);
    }
    return entry.watch;
  }

  async close(): Promise<void> {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    await Promise.all([...this.tables.values()].map(({ table }) => table.close()));
  }

  private each(apply: (table: VerdictTable) => void): void {
    for (const { table } of this.tables.values()) apply(table);
  }
}
