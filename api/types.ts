import type { ExportRecord } from "../actors/export/export-actor";
import type { PolicyRevisionRecord } from "../actors/policy/revision-actor";
import type { ConsentEntry, UserRecord } from "../actors/user/user-actor";
import type { JobRecord } from "../actors/redaction/job-actor";
import type { PolicyConfig } from "../policy/model";
import type { ItemKind, SectionWrite } from "../policy/sections";
import type { PersonalizedTerms, TermsContext } from "../decision/terms";
import type { Decision, DecisionRequest } from "../decision/types";
import type { SummaryAdvice } from "../decision/record-redaction";
import type { DocumentFormat, RedactionRequest } from "../redaction/types";
import type { AccessReport, ErasureReport, ReportQuery, RestrictionResult } from "./subject-rights";

/**
 * The REST API's contract: who calls, the bodies and views of each root path, and the ports
 * the gateway calls (implemented in ports/, exports/ and redaction/jobs/). Types only: every
 * folder may read it, and it reads no door, port or gateway.
 */

/** What the node serving an export reports about it (GET /export), whatever its type. */
export interface ExportServing {
  host: string;
  port: number;
  since: string;
  connections: { open: number; total: number; refused: number };
  /** Rows (PostgreSQL) or records (pipeline) seen, kept whole or with fields emptied, dropped; and values emptied. */
  rows: { in: number; kept: number; dropped: number; valuesNulled: number };
  /** SQL exports: statement texts analysed, and those parsed (the rest came from the analysis cache). */
  statements?: { analysed: number; parsed: number };
  /** Pipeline exports: the streaming mode's progress through the input subject. */
  stream?: { processed: number; lastInputSeq: number };
}

/** Who is calling, as the authentication hook found it: trace records carry it to correlate with the audit log (spec 6). */
export interface Caller {
  /** Per TCP connection: the audit records of this connection carry it too. */
  connectionId: string;
  /** The verified subject, or null when the component does not enforce authentication. */
  subject: string | null;
  /** What the credential asserts (OAuth scopes as `scope:<name>`). */
  assertions: string[];
}

/** Who made a request: the authenticated identity once authentication lands, else "anonymous". */
export type Requester = string;

/** A configuration write's outcome. */
export interface ConfigWriteResult {
  revision: number;
  changed: boolean;
}

/**
 * The policy configuration as the gateway sees it: actor calls behind a port, so the gateway
 * never touches JetStream. Errors are runtime errors with codes (CONFIG_INVALID,
 * REVISION_MISMATCH, CONFIG_REFERENCED, NOT_FOUND) and details.
 */
export interface PolicyPort {
  read(): Promise<{ revision: number; config: PolicyConfig }>;
  /** `mappingGroupsFixed`: the caller does not hold mapping:write, so the write is refused (MAPPING_WRITE_FORBIDDEN) if it changes mapping groups. */
  replace(config: unknown, by: Requester, expectedRevision?: number, mappingGroupsFixed?: boolean): Promise<ConfigWriteResult>;
  write(write: SectionWrite, by: Requester, expectedRevision?: number): Promise<ConfigWriteResult>;
  remove(kind: ItemKind, id: string, by: Requester, expectedRevision?: number): Promise<ConfigWriteResult>;
  history(fromRevision: number, limit: number): Promise<Array<Omit<PolicyRevisionRecord, "config">>>;
  revision(revision: number): Promise<PolicyRevisionRecord | null>;
}

/** A decision query of the decision API (and of every door that decides about one user). */
export interface DecisionQuery extends DecisionRequest {
  userId: string;
  /** When given, the answer says for each record field of this mapping group whether it may be used. */
  mappingGroup?: string;
}

/** A traced decision: the engine's answer, with its trace id and, when asked, field-level results. */
export interface DecisionAnswer extends Decision {
  traceId: string;
  userId: string;
  decidedAt: string;
  fields?: Record<string, boolean>;
}

/** Decisions, made near the caller from cached policy and user state, each written to the trace. */
export interface DecisionPort {
  /** `caller` (who asked, on which connection) goes into the trace record, for correlation with the audit log. */
  decide(query: DecisionQuery, door: string, caller?: Caller): Promise<DecisionAnswer>;
}

/** Users, terms, consent and guardians, as actor calls (the user actor). */
export interface UserPort {
  create(
    userId: string,
    attributes: Record<string, string> | undefined,
    contractualRelationship: { purposeId: string; termsId: string } | undefined,
  ): Promise<UserRecord>;
  get(userId: string): Promise<UserRecord>;
  erase(userId: string, by: Requester): Promise<{ erased: string; unlinked: string[] }>;
  termsFor(context: TermsContext): Promise<PersonalizedTerms>;
  termsOf(userId: string): Promise<{ terms: PersonalizedTerms; acceptedTermsHash: string | null; reacceptRequired: boolean; child: boolean }>;
  /** `termsHash`: the terms the user was shown; accepted only while they are the current ones (else TERMS_CHANGED, 409). */
  accept(
    userId: string,
    acceptorId: string | undefined,
    termsHash?: string,
  ): Promise<{ termsHash: string; revision: number; acceptedAt: string; acceptorId: string | null }>;
  consent(userId: string, grantorId: string | undefined, consents: ConsentEntry[]): Promise<unknown>;
  revoke(userId: string, grantorId: string | undefined, purposeId: string, termsId: string | undefined): Promise<unknown>;
  /** Once the child has a guardian, `grantorId` must be one of them (a guardian adds another). */
  addGuardian(childId: string, guardianId: string, grantorId?: string): Promise<{ guardians: string[] }>;
  guardianOptions(userId: string): Promise<unknown[]>;
  setFlow(userId: string, guardianId: string, purposeId: string, thirdPartyId: string, disabled: boolean): Promise<unknown>;
}

/** Data-subject rights (docs/subject-rights.md): the access report, restriction, erasure with its report. Errors: NOT_FOUND, NOT_A_GUARDIAN, GUARDIAN_INVALID, GUARDIAN_CATEGORIES, REPORT_INVALID, INDEX_BEHIND. */
export interface RightsPort {
  report(userId: string, query: ReportQuery, by: Requester): Promise<AccessReport>;
  /** Audits a report or restriction request refused because the caller is not that user (nor their guardian, nor an admin). */
  refused(userId: string, by: Requester, what: string, reason: string): Promise<void>;
  /** The report's decisions as CSV, for a download. */
  csv(report: AccessReport): string;
  restrict(userId: string, arg: { actorId?: string; purposeIds?: string[] }, by: Requester): Promise<RestrictionResult>;
  erase(userId: string, by: Requester): Promise<ErasureReport>;
}

/** What a record or a document is redacted for (spec 4.4 query). */
export type RedactRequest = RedactionRequest;

/** A redacted record, or a dropped one (which carries none of the record's values). */
export type RecordRedaction = {
  traceId: string;
  reasons: Array<{ code: string; text: string }>;
  advice: SummaryAdvice[];
  revision: number;
} & ({ dropped: true } | { dropped: false; record: Record<string, unknown>; fields: Record<string, { kept: boolean; why: string }> });

export interface RedactPort {
  redactRecord(request: RedactRequest, record: Record<string, unknown>, caller?: Caller): Promise<RecordRedaction>;
}

/** Document redaction jobs (spec 2.13, 3.2, 4.4). */
export interface DocumentPort {
  /**
   * Stores the document as it arrives and creates its job, owned by `owner` (the caller's subject, or null); refused before
   * reading when the request names unknown things or `declaredBytes` (the Content-Length) is over a quota.
   */
  submit(request: RedactRequest, format: DocumentFormat, body: AsyncIterable<Buffer>, owner: string | null, declaredBytes?: number): Promise<JobRecord>;
  job(jobName: string): Promise<JobRecord>;
  /** The redacted document of a complete job, in order. */
  download(jobName: string): Promise<{ job: JobRecord; chunks: AsyncIterable<Buffer> }>;
  list(): JobRecord[];
  remove(jobName: string): Promise<JobRecord>;
}

/** The body of PUT /export (spec 2.12): the stored fields a client sets (each type checks its own), the type, and an optional listen port. */
export interface ExportBody
  extends Pick<
    ExportRecord,
    | "endpoint"
    | "resolverGroup"
    | "metadata"
    | "credentials"
    | "resourceServerId"
    | "cloudSigning"
    | "allowWrites"
    | "strict"
    | "backendTls"
    | "backendCa"
    | "pushdown"
    | "buckets"
    | "formats"
    | "rangedReads"
  > {
  /** Checked against the known types before anything else. */
  type: string;
  /** Asks for this listen port; otherwise one is allocated from the export port range. */
  port?: number;
}

/** An export as GET /export shows it: its stored state and what its serving node reports. */
export interface ExportView extends Omit<ExportRecord, "credentials" | "cloudSigning"> {
  /** The export's cloud-signing id and region, and whether it sets its own key (never shown). */
  cloudSigning?: { id?: string; region?: string; key?: "(set)" };
  /** Whose identity back-end connections use: the export's own credentials (never shown) or each client's. */
  backendIdentity: "export" | "client";
  /** Pipeline exports: the NATS subjects of request/reply and of the streaming mode. */
  subjects?: { request: string; input: string; output: string };
  /** The node serving it now, with its connection and row counts; null when no node serves it. */
  serving: (ExportServing & { nodeId: string }) | null;
  /** Why an active export is not listening, when it is not. */
  servingError: string | null;
}

/** Exports (spec 4.1, 3.1): create, list, stop, start, delete. Errors: EXPORT_INVALID, EXPORT_NOT_FOUND, EXPORT_PORT_TAKEN, EXPORT_NO_PORT. */
export interface ExportPort {
  /**
   * `mayChooseDoorIdentity`: the caller holds export:admin. Without it, a body that sets the door's own identity (cloudSigning id
   * or key, resourceServerId) is refused (EXPORT_IDENTITY_FORBIDDEN): a signing id is what authorization rules grant to.
   */
  create(body: ExportBody, by: Requester, mayChooseDoorIdentity?: boolean): Promise<ExportView>;
  list(): Promise<ExportView[]>;
  get(id: string): Promise<ExportView>;
  stop(id: string, by: Requester): Promise<ExportView>;
  start(id: string, by: Requester): Promise<ExportView>;
  remove(id: string, by: Requester): Promise<ExportView>;
}
