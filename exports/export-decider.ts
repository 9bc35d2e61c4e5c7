import { randomUUID } from "node:crypto";
import type { CompiledPolicy } from "../decision/compiled-policy";
import { VerdictInterner } from "../decision/verdicts";
import { verdictExpiry } from "../decision/verdict-lifetime";
import { VerdictMemo, type RememberedVerdict } from "../decision/verdict-memo";
import { planRecords, type RecordPlan } from "../decision/record-redaction";
import type { Decision, DecisionRequest } from "../decision/types";
import type { EventLog } from "../actors/runtime/event-log";
import type { MappedField, MappingView, RowDecider, RowVerdict } from "./row-decider";
import type { UserRecord } from "../actors/user/user-actor";
import type { DecisionService } from "../ports/decision-service";
import { allStored, decideTraced, withUserStates } from "../ports/traced-decisions";
import { flowOf } from "../decision/engine";

const unavailable: MappingView = { key: "unavailable", fields: new Map() };

interface View {
  mapping: MappingView;
  /** The mapping group's record plan; undefined when the group does not exist (nothing maps). */
  plan?: RecordPlan;
}

interface Remembered extends RememberedVerdict {
  verdict: RowVerdict;
  /** The whole decision, for doors that answer with its summary (pipeline exports). */
  decision: Decision;
  /** The configuration revision it was made with. */
  madeUnder: number;
  /** JetStream has stored the decision's trace record; before that the verdict is not handed out. */
  stored: boolean;
  /** Settles when the trace record is stored (or not). */
  traced: Promise<void>;
}

/**
 * The decisions of one export (one purpose, one mapping group) near its proxy. Each user is
 * decided once and the verdict reused for every row until the user's state or the
 * configuration changes (or its lifetime ends, see `verdictExpiry`); each decision is traced once, with the export's
 * id. No configuration in memory, or no such mapping group: nothing is mapped, so every row is
 * dropped (fail closed).
 */
export class ExportDecider implements RowDecider {
  private readonly memo = new VerdictMemo<Remembered>();
  private readonly verdicts = new VerdictInterner();
  private view: View = { mapping: unavailable };
  private viewRevision = -1;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly decisions: DecisionService,
    private readonly events: EventLog,
    private readonly nodeId: string,
    private readonly exportId: string,
    private readonly request: DecisionRequest,
    private readonly mappingGroup: string,
  ) {
    const unsubscribeUsers = decisions.onUserChange((userId) => this.memo.forget(userId));
    // Changes may have been missed: no verdict can be trusted.
    const unsubscribeReset = decisions.onUsersReset(() => this.memo.forgetAll());
    this.unsubscribe = () => {
      unsubscribeUsers();
      unsubscribeReset();
    };
  }

  /** Reads the configuration once, so the first connection finds it in memory. */
  async warm(): Promise<void> {
    await this.decisions.policy();
  }

  mapping(): MappingView {
    return this.current().mapping;
  }

  /** The mapping group's record plan as it stands; undefined when no configuration is in memory or the group is gone (fail closed). */
  recordPlan(): RecordPlan | undefined {
    return this.current().plan;
  }

  private current(): View {
    const compiled = this.decisions.currentPolicy();
    if (!compiled) {
      void this.warm().catch(() => undefined);
      return { mapping: unavailable };
    }
    if (compiled.revision !== this.viewRevision) {
      this.view = this.viewOf(compiled);
      this.viewRevision = compiled.revision;
    }
    return this.view;
  }

  private viewOf(compiled: CompiledPolicy): View {
    const group = compiled.config.mappingGroups.find((g) => g.name === this.mappingGroup);
    if (!group) return { mapping: { key: `${compiled.revision}/missing`, fields: new Map() } };
    const plan = planRecords(compiled, group);
    const fields = new Map<string, MappedField>();
    for (const [recordField, category] of plan.categoryOf)
      fields.set(recordField, { recordField, category, resourceOrder: plan.resourceFields.indexOf(recordField) });
    return { mapping: { key: `${compiled.revision}/${group.name}`, fields }, plan };
  }

  verdict(userId: string): RowVerdict | undefined {
    return this.remembered(userId)?.verdict;
  }

  /** Until when the user's remembered verdict holds (undefined: none remembered). */
  expiresAt(userId: string): number | undefined {
    return this.remembered(userId)?.expiresAt;
  }

  /** The user's remembered decision; undefined until `load` decided it (or after it went stale). */
  decision(userId: string): Decision | undefined {
    return this.remembered(userId)?.decision;
  }

  private remembered(userId: string): Remembered | undefined {
    const remembered = this.memo.get(userId, this.viewRevision);
    // Not before its trace is stored (rule 8): until then the user counts as undecided.
    return remembered?.stored ? remembered : undefined;
  }

  /**
   * Decides these users now (remembered for the next rows); returns the decisions made, once
   * their trace records are stored. Throws TraceUnavailableError when they are not: nothing
   * decided then is handed out (the caller fails closed).
   */
  async load(userIds: readonly string[]): Promise<Map<string, Decision>> {
    const compiled = await this.decisions.policy();
    // Brings the view's revision up to the one these verdicts are made with (`verdict` compares them).
    this.mapping();
    const made = new Map<string, Decision>();
    const entries: Array<[string, Remembered]> = [];
    const stored: Array<Promise<void>> = [];
    const undecided: string[] = [];
    for (const userId of userIds) if (!this.join(userId, compiled.revision, made, stored)) undecided.push(userId);
    await withUserStates(
      undecided,
      (userId) => this.decisions.userState(userId),
      (userId, state) => {
        // Another load may have decided the user while this one read the state: a second decision would replace the first in the memo
        // before its record is stored, and a caller of the first, reading the memo once its own record is, would find no verdict and drop the row.
        if (this.join(userId, compiled.revision, made, stored)) return;
        const { decision, stored: traced } = this.decideFor(compiled, userId, state);
        made.set(userId, decision);
        // Remembered now, so a change to the user meanwhile still voids it; handed out only once stored.
        const entry: Remembered = {
          verdict: this.verdicts.of(decision),
          decision,
          madeUnder: compiled.revision,
          expiresAt: verdictExpiry(Date.now()),
          stored: false,
          traced,
        };
        this.memo.set(userId, entry);
        entries.push([userId, entry]);
        stored.push(traced);
      },
    );
    try {
      await allStored(stored);
    } catch (error) {
      for (const [userId, entry] of entries) this.memo.forget(userId, entry);
      throw error;
    }
    for (const [, entry] of entries) entry.stored = true;
    return made;
  }

  /**
   * Uses the user's verdict made under `revision` by another load, stored or on its way to JetStream (then waited for in `stored`),
   * rather than deciding (and tracing) the user again; false when there is none.
   */
  private join(userId: string, revision: number, made: Map<string, Decision>, stored: Array<Promise<void>>): boolean {
    const known = this.memo.get(userId, revision);
    if (!known) return false;
    made.set(userId, known.decision);
    // Marked stored here too: the load that made it marks it after its own wait, which may come after this one's (the caller would then find no verdict and drop the row).
    if (!known.stored)
      stored.push(
        known.traced.then(() => {
          known.stored = true;
        }),
      );
    return true;
  }

  /**
   * Records the export dropped without a decision, by reason (`NO_USER_ID`: no user id in its resource-context fields;
   * `MAPPING_GROUP_MISSING`), as one trace record (policy-semantics 8: a drop says why in the trace). Resolves once stored;
   * TraceUnavailableError otherwise, and the records are not answered.
   */
  traceUndecided(dropped: Readonly<Record<string, number>>): Promise<void> {
    return this.events.trace("export", flowOf(this.request.type), {
      kind: "export.undecided",
      traceId: randomUUID(),
      time: new Date().toISOString(),
      door: "export",
      nodeId: this.nodeId,
      exportId: this.exportId,
      mappingGroup: this.mappingGroup,
      type: this.request.type,
      purposeId: this.request.purposeId,
      revision: this.decisions.currentPolicy()?.revision ?? null,
      allowed: false,
      dropped,
    });
  }

  /** Whether a configuration is in memory (without one nothing can be decided). */
  hasPolicy(): boolean {
    return this.decisions.currentPolicy() !== undefined;
  }

  private decideFor(compiled: CompiledPolicy, userId: string, state: UserRecord | null): { decision: Decision; stored: Promise<void> } {
    const details = { kind: "export.user", exportId: this.exportId, mappingGroup: this.mappingGroup };
    return decideTraced(this.events, { door: "export", nodeId: this.nodeId }, compiled, userId, state, this.request, details);
  }

  close(): void {
    this.unsubscribe();
  }
}
