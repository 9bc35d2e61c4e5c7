import { createHash } from "node:crypto";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { Client, type ClientConfig } from "pg";
import type { Logger } from "pino";
import { addressOfStateKey, Buckets } from "../../actors/runtime/addressing";
import type { RowDecider } from "../../exports/row-decider";
import { categoryColumn, verdictSchema, type PushdownTarget } from "./analysis/pushdown";

/** Where a database's verdicts stand, as sessions need it: `current` once every change the node knows of is in the table. */
export interface VerdictState {
  /** The version in the table (0: none yet). */
  version: number;
  current: boolean;
  /** Why the table could not be brought up to date (statements are refused meanwhile). */
  error?: string;
}

/** Users decided per load while the whole table is rebuilt. */
const rebuildBatch = 1000;

/** The export's key in `warden.verdict_versions`, and its table's name: short, fixed per export, safe as an identifier. */
export function pushdownTarget(exportId: string, versionMarker: string): PushdownTarget {
  const key = createHash("sha256").update(exportId).digest("hex").slice(0, 24);
  return { table: `${verdictSchema}."verdicts_${key}"`, exportKey: key, versionMarker };
}

/**
 * One database's verdict table of a pushdown export (docs/postgres-export.md, "Pushdown"): the
 * users who may be used and their allowed categories, kept by the node that serves the export,
 * logged in with the export's credentials. Built whole when it starts and at each UTC midnight (age
 * overrides begin at a birthday); a user's change is written as soon as the node hears of it; a
 * configuration change or a lost watch of users (changes may have been missed) rebuilds it. Every write
 * raises the version in `warden.verdict_versions` in the same transaction, from the clock (so a
 * node taking over after another writes higher versions). Each decision is traced before it is
 * written (the decider's `load`).
 */
export class VerdictTable {
  private state: VerdictState = { version: 0, current: false };
  /** Changes heard of, and the count that the last write took in. */
  private heard = 1;
  private writtenHeard = 0;
  private rebuildNeeded = true;
  private readonly pendingUsers = new Set<string>();
  private running?: Promise<void>;
  private client?: Client;
  /** The category columns the table is known to have (added when the mapping names a new category). */
  private readonly categoryColumns = new Set<string>();
  private closed = false;
  private readonly listeners = new Set<(state: VerdictState) => void>();
  private midnight?: NodeJS.Timeout;

  constructor(
    private readonly settings: {
      target: PushdownTarget;
      database: string;
      connection: Pick<ClientConfig, "host" | "port" | "user" | "password" | "ssl">;
      decider: RowDecider;
      nc: NatsConnection;
      log: Logger;
      /** The wall clock and timer the midnight rebuild is scheduled with (tests move them). */
      clock?: { now(): number; setTimeout(run: () => void, ms: number): NodeJS.Timeout };
    },
  ) {
    this.scheduleMidnight();
    this.work();
  }

  get current(): VerdictState {
    return this.state;
  }

  /** Called with every new state (the version written, whether current, failures). */
  onState(listener: (state: VerdictState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A user's state changed: their verdict is written again. */
  userChanged(userId: string): void {
    this.pendingUsers.add(userId);
    this.changed();
  }

  /** The configuration changed or user changes may have been missed: every verdict is written again. */
  rebuild(): void {
    this.rebuildNeeded = true;
    this.changed();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.midnight);
    await this.running?.catch(() => undefined);
    await this.client?.end().catch(() => undefined);
  }

  private changed(): void {
    this.heard++;
    this.setState({ ...this.state, current: false });
    this.work();
  }

  private setState(state: VerdictState): void {
    this.state = state;
    for (const listener of this.listeners) listener(state);
  }

  /** Writes until everything heard of is in the table; one write at a time. */
  private work(): void {
    if (this.running || this.closed) return;
    this.running = (async () => {
      while (!this.closed && this.writtenHeard < this.heard) {
        const heard = this.heard;
        try {
          await this.writeOnce();
          this.writtenHeard = heard;
          this.setState({ version: this.state.version, current: this.writtenHeard === this.heard });
        } catch (error) {
          this.settings.log.error(
            { err: error, database: this.settings.database },
            "the pushdown verdict table could not be brought up to date; statements wait and are refused meanwhile",
          );
          this.setState({ ...this.state, current: false, error: `the export's verdicts could not be brought up to date (${(error as Error).message})` });
          await this.client?.end().catch(() => undefined);
          this.client = undefined;
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      }
    })().finally(() => {
      this.running = undefined;
      if (!this.closed && this.writtenHeard < this.heard) this.work();
    });
  }

  private async writeOnce(): Promise<void> {
    const client = await this.connected();
    const rebuild = this.rebuildNeeded;
    this.rebuildNeeded = false;
    const users = rebuild ? await this.allUsers() : [...this.pendingUsers];
    this.pendingUsers.clear();
    const verdicts: Record<string, string[]> = {};
    const refused: string[] = [];
    try {
      for (let i = 0; i < users.length; i += rebuildBatch) {
        const batch = users.slice(i, i + rebuildBatch);
        await this.settings.decider.load(batch);
        for (const userId of batch) {
          const verdict = this.settings.decider.verdict(userId);
          if (verdict?.allowed) verdicts[userId] = [...verdict.categories].sort();
          else refused.push(userId);
        }
      }
    } catch (error) {
      // Not decided (a trace not stored): written again next time.
      if (rebuild) this.rebuildNeeded = true;
      else for (const userId of users) this.pendingUsers.add(userId);
      throw error;
    }
    const version = Math.max((this.settings.clock?.now() ?? Date.now()) * 1000, this.state.version + 1);
    const { table, exportKey } = this.settings.target;
    const categories = [
      ...new Set([...this.settings.decider.mapping().fields.values()].flatMap((field) => (field.category === undefined ? [] : [field.category]))),
    ].sort();
    await client.query("BEGIN");
    try {
      for (const category of categories) {
        const column = categoryColumn(category);
        if (this.categoryColumns.has(column)) continue;
        await client.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} boolean NOT NULL DEFAULT false`);
        this.categoryColumns.add(column);
      }
      if (rebuild) await client.query(`TRUNCATE ${table}`);
      else if (refused.length > 0) await client.query(`DELETE FROM ${table} WHERE user_id = ANY($1::text[])`, [refused]);
      const columns = categories.map(categoryColumn);
      const flags = columns.map((column, i) => `, value ? $${i + 2} AS ${column}`).join("");
      const updates = columns.map((column) => `, ${column} = EXCLUDED.${column}`).join("");
      await client.query(
        `INSERT INTO ${table} (user_id, categories${columns.map((c) => `, ${c}`).join("")}) SELECT key, ARRAY(SELECT jsonb_array_elements_text(value))${flags} FROM jsonb_each($1::jsonb) ON CONFLICT (user_id) DO UPDATE SET categories = EXCLUDED.categories${updates}`,
        [JSON.stringify(verdicts), ...categories],
      );
      const raised = await client.query(
        `INSERT INTO ${verdictSchema}.verdict_versions (export_id, version) VALUES ($1, $2) ON CONFLICT (export_id) DO UPDATE SET version = EXCLUDED.version WHERE ${verdictSchema}.verdict_versions.version < EXCLUDED.version`,
        [exportKey, String(version)],
      );
      // Another node wrote a newer version (it serves the export now): this write is not the truth.
      if (raised.rowCount !== 1) throw new Error("a newer version of the verdicts was written by another node");
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      // A rolled-back ALTER added nothing: look again next time.
      this.categoryColumns.clear();
      if (rebuild) this.rebuildNeeded = true;
      else for (const userId of users) this.pendingUsers.add(userId);
      throw error;
    }
    this.state = { version, current: false };
  }

  /** The connection with the export's credentials, and the schema, table and guard function (created when missing). */
  private async connected(): Promise<Client> {
    if (this.client) return this.client;
    const client = new Client({ ...this.settings.connection, database: this.settings.database, application_name: "warden verdicts" });
    client.on("error", () => undefined);
    await client.connect();
    try {
      const { table } = this.settings.target;
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${verdictSchema}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${verdictSchema}.verdict_versions (export_id text PRIMARY KEY, version numeric NOT NULL)`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${table} (user_id text PRIMARY KEY, categories text[] NOT NULL)`);
      // The guard every rewritten statement calls: it refuses to run on verdicts older than the node's.
      await client.query(
        `CREATE OR REPLACE FUNCTION ${verdictSchema}.require_verdicts(export text, at_least numeric) RETURNS boolean LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog AS $$ ` +
          `BEGIN IF coalesce((SELECT version FROM ${verdictSchema}.verdict_versions WHERE export_id = export), -1) < at_least THEN ` +
          `RAISE EXCEPTION USING ERRCODE = '55000', MESSAGE = 'the export''s verdicts are older than the service''s; try again'; END IF; RETURN true; END $$`,
      );
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    this.client = client;
    return client;
  }

  /** Every user the service knows (their states' keys). */
  private async allUsers(): Promise<string[]> {
    const kv = await new Kvm(this.settings.nc).open(Buckets.state);
    const users: string[] = [];
    for await (const key of await kv.keys("user.>")) users.push(addressOfStateKey(key).id);
    return users;
  }

  private scheduleMidnight(): void {
    const clock = this.settings.clock ?? { now: Date.now, setTimeout };
    const now = new Date(clock.now());
    const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    this.midnight = clock.setTimeout(
      () => {
        this.rebuild();
        this.scheduleMidnight();
      },
      next - now.getTime() + 1,
    );
    this.midnight.unref();
  }
}
