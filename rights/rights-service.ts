import { compiledFor } from "../decision/compile-cache";
import { policy } from "../actors/policy/policy-actor";
import type { ActorRuntime } from "../actors/runtime/runtime";
import { HandlerError } from "../actors/runtime/errors";
import { confirmGuardian, user, type UserRecord } from "../actors/user/user-actor";
import { isChild } from "../decision/children";
import type { AccessReport, ErasureReport, ReportQuery, RestrictionResult } from "../api/subject-rights";
import { accessReport } from "./access-report";
import type { IndexBucket } from "./index-bucket";
import { reportCsv } from "./report-csv";

const defaultDays = 30;
const dayMs = 86_400_000;

function periodOf(query: ReportQuery, now: Date): { from: Date; to: Date } {
  const to = query.to === undefined ? now : new Date(query.to);
  const from = query.from === undefined ? new Date(to.getTime() - defaultDays * dayMs) : new Date(query.from);
  if (Number.isNaN(to.getTime()) || Number.isNaN(from.getTime()))
    throw new HandlerError("REPORT_INVALID", "from and to are ISO 8601 dates (YYYY-MM-DD) or times");
  if (from > to) throw new HandlerError("REPORT_INVALID", "from is after to");
  return { from, to };
}

/**
 * Data-subject rights over the user actors and the decision index (docs/subject-rights.md):
 * the access report, restriction and the erasure report. Every call is audited (category `user`).
 */
export class RightsService {
  constructor(
    private readonly runtime: ActorRuntime,
    private readonly index: IndexBucket,
    private readonly forgetCached: (userId: string) => void,
    private readonly eraseUser: (userId: string, by: string) => Promise<{ erased: string; unlinked: string[] }>,
  ) {}

  private async compiled() {
    const { config, revision } = await this.runtime.client.ref(policy, "default").get();
    return compiledFor(config, revision);
  }

  /** The user's access report; a guardian's shows only the user-access categories that are also guardian categories. */
  async report(userId: string, query: ReportQuery, by: string): Promise<AccessReport> {
    const now = new Date();
    const period = periodOf(query, now);
    const [record, compiled] = await Promise.all([this.runtime.client.ref(user, userId).get(), this.compiled()]);
    const guardianId = query.actorId !== undefined && query.actorId !== userId ? query.actorId : undefined;
    let categoryIds = compiled.config.userAccess.categoryIds;
    if (guardianId !== undefined) {
      await this.checkGuardian(record, guardianId, compiled, now);
      categoryIds = categoryIds.filter((c) => compiled.guardian?.categoryIds.includes(c));
    }
    const indexedThrough = await this.index.caughtUp();
    const { entry } = await this.index.entry(userId);
    const report = accessReport(compiled, record, entry, { ...period, offset: query.offset, limit: query.limit, categoryIds }, indexedThrough, now, guardianId);
    await this.runtime.events.audit({
      category: "user",
      level: "info",
      event: "report.read",
      message: `${by} read the access report of ${userId}${guardianId ? ` as guardian ${guardianId}` : ""}`,
      details: { userId, by, guardianId: guardianId ?? null, from: report.period.from, to: report.period.to },
    });
    return report;
  }

  async refused(userId: string, by: string, what: string, reason: string): Promise<void> {
    await this.runtime.events.audit({
      category: "user",
      level: "warn",
      event: "report.refused",
      message: `${by} was refused the ${what} of ${userId}: ${reason}`,
      details: { userId, by, what, reason },
    });
  }

  csv(report: AccessReport): string {
    return reportCsv(report);
  }

  /** A guardian reads for a linked child only, and only while the child is one (both sides of the link must hold). */
  private async checkGuardian(record: UserRecord, guardianId: string, compiled: Awaited<ReturnType<RightsService["compiled"]>>, now: Date): Promise<void> {
    if (!isChild(compiled, record, now)) throw new HandlerError("GUARDIAN_INVALID", `${record.userId} is not a child: they read their own report`);
    await confirmGuardian(compiled, record, guardianId, now, () => this.runtime.client.ref(user, guardianId).get());
  }

  /** Restriction: opt-ins and consents off in one write (revocations in the history), audited. */
  async restrict(userId: string, arg: { actorId?: string; purposeIds?: string[] }, by: string): Promise<RestrictionResult> {
    let result: Omit<RestrictionResult, "userId">;
    try {
      result = await this.runtime.client.ref(user, userId).restrict(arg);
    } finally {
      this.forgetCached(userId);
    }
    await this.runtime.events.audit({
      category: "user",
      level: "info",
      event: "user.restricted",
      message: `${result.by} restricted the use of ${userId}'s data (${result.restricted.length} opt-ins and consents off)`,
      details: { userId, by, actorId: result.by, restricted: result.restricted, disabledFlows: result.disabledFlows, leftOn: result.leftOn },
    });
    return { userId, ...result };
  }

  /**
   * Erasure: the user's state and decision index entry go; the trace and audit records stay for
   * their retention (they are the account of what was done). The index entry is replaced by a
   * marker at the trace's current head, so the indexer never folds the erased past back in.
   */
  async erase(userId: string, by: string): Promise<ErasureReport> {
    // A user already gone (an erasure cut short after the user was removed, asked again) still has the index entry reset, then NOT_FOUND.
    const outcome = await this.eraseUser(userId, by).catch((error: { code?: string }) => {
      if (error.code !== "NOT_FOUND") throw error;
      return { gone: error };
    });
    const head = await this.index.traceHead();
    for (;;) {
      const { revision } = await this.index.entry(userId);
      if ((await this.index.write(userId, { seq: head, days: {}, recent: [], erasedAt: new Date().toISOString() }, revision)) !== undefined) break;
    }
    if ("gone" in outcome) throw outcome.gone;
    const { erased, unlinked } = outcome;
    return {
      erased,
      removed: ["attributes, contract, accepted terms, opt-ins, consents and their history, guardian links, disabled flows", "the decision index entry"],
      unlinked,
      kept: [
        { what: "trace records of the decisions taken about the user (no record values)", where: "stream WARDEN_TRACE", retention: "30 days or 4 GiB" },
        { what: "audit records naming the user (erasure, guardian links, reports)", where: "stream WARDEN_AUDIT", retention: "365 days or 1 GiB" },
      ],
    };
  }
}
