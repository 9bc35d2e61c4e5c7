import type { DecisionRequest } from "../decision/types";
import type { UserRecord } from "../actors/user/user-actor";

/** The data-subject rights contract (docs/subject-rights.md): the access report, restriction and erasure views. Types only. */

/** One traced decision about a user, as the report lists it (never record values). */
export interface IndexedEvent {
  time: string;
  door: string;
  type: string;
  purposeId: string;
  thirdPartyId?: string;
  termsId?: string;
  flow: string;
  allowed: boolean;
  categoryIds: string[];
  traceId: string;
  /** The export that decided it, when an export did. */
  exportId?: string;
}

/** What the report covers: the period, a page of the latest events, and the categories the reader may see. */
export interface ReportWindow {
  from: Date;
  to: Date;
  offset: number;
  limit: number;
  /** The user-access categories (for a guardian: those also in the guardian categories). */
  categoryIds: readonly string[];
}

export interface PurposeUse {
  type: DecisionRequest["type"];
  purposeId: string;
  purposeName: string;
  thirdPartyId?: string;
  termsId?: string;
  flow: string;
}

export interface GroupCount {
  door: string;
  exportId?: string;
  type: string;
  purposeId: string;
  thirdPartyId?: string;
  termsId?: string;
  flow: string;
  allowed: number;
  denied: number;
}

/** GET /user/{userId}/report (docs/subject-rights.md): who used the user's data for what, from the decision index. */
export interface AccessReport {
  userId: string;
  generatedAt: string;
  period: { from: string; to: string };
  /** Set when a guardian reads a child's report. */
  guardianId?: string;
  categories: Array<{ categoryId: string; name: string }>;
  state: {
    createdAt: string;
    terms: { accepted: boolean; acceptedAt: string | null; termsHash: string | null; acceptorId: string | null };
    contract: { purposeId: string; termsId: string } | null;
    optIns: Array<{ purposeId: string; categoryIds: string[] }>;
    consents: Array<{ purposeId: string; termsId: string; categoryIds: string[] }>;
    consentHistory: UserRecord["consentHistory"];
    guardians: string[];
    children: string[];
    disabledFlows: UserRecord["disabledFlows"];
    overrides: Array<{ name: string; propertyName: string; scope: "platformUse" | "platformSharing"; allowedPurposeIds: string[]; missingProperty?: string }>;
  };
  /** For each category shown: the purposes, third parties and flows that may use it now. */
  uses: Array<{ categoryId: string; uses: PurposeUse[] }>;
  decisions: {
    /** Trace stream sequence the index had folded when the report was made (every decision stored before the request). */
    indexedThrough: number;
    total: number;
    allowed: number;
    denied: number;
    byPurposeAndDoor: GroupCount[];
    /** Per day and purpose, for charts. */
    byDay: Array<{ day: string; purposeId: string; allowed: number; denied: number }>;
    latest: { offset: number; limit: number; total: number; kept: number; events: IndexedEvent[] };
  };
}

/** What a report asks for (GET /user/{userId}/report). */
export interface ReportQuery {
  from?: string;
  to?: string;
  offset: number;
  limit: number;
  /** A guardian reading a child's report (the child's own id, or absent, for the user themself). */
  actorId?: string;
}

export interface RestrictionResult {
  userId: string;
  by: string;
  restricted: Array<{ purposeId: string; termsId?: string }>;
  disabledFlows: UserRecord["disabledFlows"];
  /** Left on: outside the guardian categories (a guardian's restriction of everything). */
  leftOn: Array<{ purposeId: string; termsId?: string; outside: string[] }>;
}

/** DELETE /user/{userId}: what went, and what stays for accountability. */
export interface ErasureReport {
  erased: string;
  removed: string[];
  unlinked: string[];
  kept: Array<{ what: string; where: string; retention: string }>;
}
