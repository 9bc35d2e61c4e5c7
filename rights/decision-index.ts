import type { IndexedEvent } from "../api/subject-rights";

/**
 * One user's entry in the decision index: what the trace holds about them, folded as it is
 * stored, so a report reads one key instead of scanning the trace stream. Pure data and pure
 * functions: the indexer (decision-indexer.ts) and the bench fold records with these.
 */

/** Decisions of one day (UTC) counted by door, purpose and outcome. */
export interface DayCount {
  door: string;
  type: string;
  purposeId: string;
  thirdPartyId?: string;
  termsId?: string;
  /** The export that decided, for decisions of door `export`. */
  exportId?: string;
  flow: string;
  allowed: boolean;
  count: number;
}

export interface UserIndexEntry {
  /** The last trace stream sequence folded into this entry: a message folded again (after a crash) is skipped. */
  seq: number;
  /** `YYYY-MM-DD` -> counts of that day. Days past the trace's retention are dropped. */
  days: Record<string, DayCount[]>;
  /** The latest decisions, newest last, at most `recentEvents`. */
  recent: IndexedEvent[];
  /** Set when the user was erased: counts from before are gone with them. */
  erasedAt?: string;
}

/** How many recent decisions each user's entry keeps (the report pages through these). */
export const recentEvents = 100;
/** Days of counts kept: the trace stream's own retention (30 days). */
export const keptDays = 31;

export const emptyEntry = (): UserIndexEntry => ({ seq: 0, days: {}, recent: [] });

/** The user a trace record is about, when it is a decision about a known user (connection summaries and record-less ones are not). */
export function decisionOf(record: Record<string, unknown>): (IndexedEvent & { userId: string }) | undefined {
  const { userId, time, door, type, purposeId, flow, allowed, categoryIds, traceId } = record;
  if (typeof userId !== "string" || typeof time !== "string" || typeof door !== "string" || typeof purposeId !== "string") return undefined;
  if (typeof allowed !== "boolean" || typeof flow !== "string" || typeof type !== "string" || typeof traceId !== "string") return undefined;
  const event: IndexedEvent & { userId: string } = {
    userId,
    time,
    door,
    type,
    purposeId,
    flow,
    allowed,
    categoryIds: Array.isArray(categoryIds) ? categoryIds.filter((c): c is string => typeof c === "string") : [],
    traceId,
  };
  if (typeof record.thirdPartyId === "string") event.thirdPartyId = record.thirdPartyId;
  if (typeof record.termsId === "string") event.termsId = record.termsId;
  if (typeof record.exportId === "string") event.exportId = record.exportId;
  return event;
}

const sameGroup = (count: DayCount, event: IndexedEvent): boolean =>
  count.door === event.door &&
  count.purposeId === event.purposeId &&
  count.type === event.type &&
  count.allowed === event.allowed &&
  count.thirdPartyId === event.thirdPartyId &&
  count.termsId === event.termsId &&
  count.exportId === event.exportId &&
  count.flow === event.flow;

/** The decisions of one stored trace message (stream sequence `seq`) about one user. */
export interface MessageEvents {
  seq: number;
  events: readonly IndexedEvent[];
}

/**
 * Folds the decisions of one stored trace message (stream sequence `seq`) into a user's entry.
 * Returns the entry unchanged when that message was folded already.
 */
export function fold(entry: UserIndexEntry, seq: number, events: readonly IndexedEvent[], now: Date): UserIndexEntry {
  return foldMessages(entry, [{ seq, events }], now);
}

/**
 * Folds a user's messages (in stream order) into their entry at once, skipping those folded
 * already: one new entry for the lot, not one per message (under load the indexer folds a busy
 * user's hundreds of messages every 200 ms). The entry given is left as it is (the indexer keeps
 * it in memory and folds it again when its write loses to an erasure): only lists and counts made
 * by this fold are changed in place. Returns the entry unchanged when every message was folded already.
 */
export function foldMessages(entry: UserIndexEntry, messages: readonly MessageEvents[], now: Date): UserIndexEntry {
  let seq = entry.seq;
  const fresh: IndexedEvent[] = [];
  for (const message of messages) {
    if (message.seq <= seq) continue;
    seq = message.seq;
    for (const event of message.events) fresh.push(event);
  }
  if (seq === entry.seq) return entry;
  const days = { ...entry.days };
  const copiedDays = new Set<string>();
  const made = new Set<DayCount>();
  const countsOf = (day: string): DayCount[] => {
    if (!copiedDays.has(day)) {
      copiedDays.add(day);
      days[day] = [...(days[day] ?? [])];
    }
    return days[day]!;
  };
  for (const event of fresh) {
    const counts = countsOf(event.time.slice(0, 10));
    const at = counts.findIndex((count) => sameGroup(count, event));
    const found = counts[at];
    if (found && made.has(found)) found.count++;
    else if (found) {
      const counted = { ...found, count: found.count + 1 };
      made.add(counted);
      counts[at] = counted;
    } else {
      const { time: _time, categoryIds: _categories, traceId: _trace, ...group } = event;
      const counted = { ...group, count: 1 };
      made.add(counted);
      counts.push(counted);
    }
  }
  const oldest = new Date(now.getTime() - keptDays * 86_400_000).toISOString().slice(0, 10);
  for (const day of Object.keys(days)) if (day < oldest) delete days[day];
  const recent = fresh.length >= recentEvents ? fresh.slice(-recentEvents) : [...entry.recent.slice(fresh.length - recentEvents), ...fresh];
  return { ...entry, seq, days, recent };
}
