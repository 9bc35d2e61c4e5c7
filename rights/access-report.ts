import type { CompiledPolicy } from "../decision/compiled-policy";
import { decide, purposeName } from "../decision/engine";
import { overrideMatches } from "../decision/overrides";
import type { DecisionRequest } from "../decision/types";
import type { UserRecord } from "../actors/user/user-actor";
import type { DayCount, UserIndexEntry } from "./decision-index";
import type { AccessReport, GroupCount, PurposeUse, ReportWindow } from "../api/subject-rights";

/** Every purpose the configuration names, as decision requests (one per third party, one per terms entry). */
function everyRequest(compiled: CompiledPolicy): DecisionRequest[] {
  const config = compiled.config;
  return [
    ...config.platformUse.purposes.map((p): DecisionRequest => ({ type: "platformUse", purposeId: p.stableId })),
    ...config.platformSharing.purposes.flatMap((p) =>
      p.thirdParties.map((t): DecisionRequest => ({ type: "platformSharing", purposeId: p.stableId, thirdPartyId: t.stableId })),
    ),
    ...config.contractualExchange.purposes.map((p): DecisionRequest => ({ type: "contractualExchange", purposeId: p.stableId })),
    ...config.consentedSharing.purposes.flatMap((p) =>
      p.terms.map((t): DecisionRequest => ({ type: "consentedSharing", purposeId: p.stableId, termsId: t.stableId })),
    ),
  ];
}

/** What may use each shown category now: the engine's own answer for every configured purpose. */
function usesNow(compiled: CompiledPolicy, record: UserRecord, shown: readonly string[], now: Date): AccessReport["uses"] {
  const uses = new Map<string, PurposeUse[]>(shown.map((categoryId) => [categoryId, []]));
  for (const request of everyRequest(compiled)) {
    const decision = decide(compiled, record, request, now);
    if (!decision.allowed) continue;
    const use: PurposeUse = {
      type: request.type,
      purposeId: request.purposeId,
      purposeName: purposeName(compiled, request) ?? request.purposeId,
      flow: decision.flow,
    };
    if (request.thirdPartyId) use.thirdPartyId = request.thirdPartyId;
    if (request.termsId) use.termsId = request.termsId;
    for (const categoryId of decision.categoryIds) uses.get(categoryId)?.push(use);
  }
  return [...uses].map(([categoryId, list]) => ({ categoryId, uses: list }));
}

function stateOf(compiled: CompiledPolicy, record: UserRecord, shown: readonly string[], now: Date): AccessReport["state"] {
  const visible = (categoryIds: readonly string[]) => categoryIds.filter((c) => shown.includes(c));
  const overrides = (scope: "platformUse" | "platformSharing", list: CompiledPolicy["useOverrides"]) =>
    list.flatMap((override) => {
      const match = overrideMatches(override, record.attributes, now);
      return match
        ? [
            {
              name: override.name,
              propertyName: override.propertyName,
              scope,
              allowedPurposeIds: override.allowedPurposeIds,
              ...(match.missingProperty ? { missingProperty: match.missingProperty } : {}),
            },
          ]
        : [];
    });
  return {
    createdAt: record.createdAt,
    terms: {
      accepted: record.acceptance !== undefined,
      acceptedAt: record.acceptance?.acceptedAt ?? null,
      termsHash: record.acceptance?.termsHash ?? null,
      acceptorId: record.acceptance?.acceptorId ?? null,
    },
    contract: record.contractualRelationship ?? null,
    optIns: Object.entries(record.optIns).map(([purposeId, optIn]) => ({
      purposeId,
      categoryIds: visible(optIn.categoryIds ?? compiled.platformUse.get(purposeId)?.categoryIds ?? []),
    })),
    consents: Object.entries(record.consents).map(([key, consent]) => {
      const slash = key.indexOf("/");
      return { purposeId: key.slice(0, slash), termsId: key.slice(slash + 1), categoryIds: visible(consent.categoryIds) };
    }),
    consentHistory: record.consentHistory.map((entry) => ({ ...entry, categoryIds: entry.categoryIds && visible(entry.categoryIds) })),
    guardians: record.guardians,
    children: record.children,
    disabledFlows: record.disabledFlows,
    overrides: [...overrides("platformUse", compiled.useOverrides), ...overrides("platformSharing", compiled.sharingOverrides)],
  };
}

const groupKey = (c: Pick<DayCount, "door" | "exportId" | "type" | "purposeId" | "thirdPartyId" | "termsId" | "flow">) =>
  JSON.stringify([c.door, c.exportId ?? null, c.type, c.purposeId, c.thirdPartyId ?? null, c.termsId ?? null, c.flow]);

function decisionsIn(entry: UserIndexEntry, window: ReportWindow, indexedThrough: number): AccessReport["decisions"] {
  const firstDay = window.from.toISOString().slice(0, 10);
  const lastDay = window.to.toISOString().slice(0, 10);
  const groups = new Map<string, GroupCount>();
  const byDay = new Map<string, { day: string; purposeId: string; allowed: number; denied: number }>();
  let allowed = 0;
  let denied = 0;
  for (const day of Object.keys(entry.days).sort()) {
    if (day < firstDay || day > lastDay) continue;
    for (const count of entry.days[day]!) {
      const key = groupKey(count);
      let group = groups.get(key);
      if (!group) {
        const { count: _count, allowed: _allowed, ...names } = count;
        groups.set(key, (group = { ...names, allowed: 0, denied: 0 }));
      }
      const dayKey = `${day}/${count.purposeId}`;
      let perDay = byDay.get(dayKey);
      if (!perDay) byDay.set(dayKey, (perDay = { day, purposeId: count.purposeId, allowed: 0, denied: 0 }));
      if (count.allowed) {
        group.allowed += count.count;
        perDay.allowed += count.count;
        allowed += count.count;
      } else {
        group.denied += count.count;
        perDay.denied += count.count;
        denied += count.count;
      }
    }
  }
  const from = window.from.toISOString();
  const to = window.to.toISOString();
  const inPeriod = entry.recent.filter((event) => event.time >= from && event.time <= to).reverse();
  const events = inPeriod
    .slice(window.offset, window.offset + window.limit)
    .map((event) => ({ ...event, categoryIds: event.categoryIds.filter((c) => window.categoryIds.includes(c)) }));
  return {
    indexedThrough,
    total: allowed + denied,
    allowed,
    denied,
    byPurposeAndDoor: [...groups.values()],
    byDay: [...byDay.values()],
    latest: { offset: window.offset, limit: window.limit, total: inPeriod.length, kept: entry.recent.length, events },
  };
}

/** The access report of one user: state, what may use each shown category now, and the decisions of the period. */
export function accessReport(
  compiled: CompiledPolicy,
  record: UserRecord,
  entry: UserIndexEntry,
  window: ReportWindow,
  indexedThrough: number,
  now: Date,
  guardianId?: string,
): AccessReport {
  const shown = window.categoryIds.filter((c) => compiled.categories.has(c));
  return {
    userId: record.userId,
    generatedAt: now.toISOString(),
    period: { from: window.from.toISOString(), to: window.to.toISOString() },
    ...(guardianId ? { guardianId } : {}),
    categories: shown.map((categoryId) => ({ categoryId, name: compiled.categories.get(categoryId)!.name })),
    state: stateOf(compiled, record, shown, now),
    uses: usesNow(compiled, record, shown, now),
    decisions: decisionsIn(entry, window, indexedThrough),
  };
}
