import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { ExportRecord } from "../../actors/export/export-actor";
import { PipelineSubjects } from "./subjects";
import type { RevisionedKv } from "../../actors/runtime/revisioned-kv";
import { component } from "../../auth/components";
import type { HttpAuthentication } from "../../http/authentication";
import type { HttpDoorPort } from "../../http/door-port";
import { listenPipelineHttp } from "./http-server";
import type { HostCheckSettings } from "../../http/host-check";
import type { HttpListenerLimits } from "../../http/listener-limits";
import { refusedAnswer } from "./refused";
import { OpeningNotAudited, type ExportAudit, type StoredAudit } from "../../exports/door";
import type { ExportServing } from "../../api/types";
import type { ExportDecider } from "../../exports/export-decider";
import { answerMessage, CredentialsUnavailable, encodedAnswer } from "./nats-answer";
import { NatsCredentialCheck } from "./nats-credentials";
import { PipelineRedactor } from "./pipeline-redactor";
import { PipelineStream, type PipelineProgress } from "./pipeline-stream";
import type { OverridesByVerifier } from "../../auth/types";

export interface PipelineExportDeps {
  nc: NatsConnection;
  record: ExportRecord;
  decider: ExportDecider;
  auth: HttpAuthentication;
  audit: ExportAudit;
  /** Audit records a login waits for (NATS credentials). */
  storedAudit: StoredAudit;
  log: Logger;
  listenHost: string;
  tls?: { cert: Buffer; key: Buffer };
  /** The export's own verifier settings over the profiles'. */
  overrides?: OverridesByVerifier;
  progress: RevisionedKv<PipelineProgress>;
  /** Timeouts and connection cap of the HTTP port; absent: the defaults. */
  listenerLimits?: HttpListenerLimits;
  /** ALLOWED_HOSTS and the refusal counter of its HTTP port (http/host-check.ts). */
  hostCheck?: HostCheckSettings;
}

/** Every node serving pipeline requests joins this queue group: one answers each request. */
const requestQueue = "warden-pipeline";

/**
 * One pipeline export as its serving node runs it (spec 4.4 rule 5): the HTTP port, NATS
 * request/reply on its request subject, and the streaming mode from its input subject to its
 * output subject, all answering through one redactor (one purpose, one mapping group, decisions
 * from the cached engine).
 */
export class PipelineExport {
  private constructor(
    private readonly deps: PipelineExportDeps,
    private readonly http: HttpDoorPort,
    private readonly requests: Subscription,
    private readonly stream: PipelineStream,
  ) {}

  static async start(deps: PipelineExportDeps): Promise<PipelineExport> {
    const { record, nc, audit } = deps;
    const redactor = new PipelineRedactor(deps.decider, record.resolverGroup);
    const { overrides } = deps;
    const credentials = new NatsCredentialCheck(deps.auth.authenticator, component("pipeline"), record.id, audit, deps.storedAudit, overrides);
    const http = await listenPipelineHttp({
      exportId: record.id,
      host: deps.listenHost,
      port: record.listen.port,
      redactor,
      counts: redactor.counts,
      auth: deps.auth,
      audit,
      storedAudit: deps.storedAudit,
      logger: deps.log,
      tls: deps.tls,
      overrides,
      listenerLimits: deps.listenerLimits,
      hostCheck: deps.hostCheck,
    });
    let lastReplyRefusal = Number.NEGATIVE_INFINITY;
    const requests = nc.subscribe(PipelineSubjects.request(record.id), {
      queue: requestQueue,
      callback: (error, msg) => {
        if (error) return;
        // The answer is published with the node's own rights: a reply subject that is no inbox
        // ($JS.API.STREAM.PURGE..., warden.pipeline.<id>.out, $KV...) would have the node act there for the requester.
        if (!isInboxSubject(msg.reply)) {
          // Audited once a minute at most, as other NATS refusals are: a flood of them must not flood the audit stream.
          if (Date.now() - lastReplyRefusal >= 60_000) {
            lastReplyRefusal = Date.now();
            audit("warn", "request.refused", `pipeline request on ${msg.subject} not answered: its reply subject is no _INBOX. subject`, {
              exportId: record.id,
              component: "pipeline",
              reply: String(msg.reply ?? "").slice(0, 200),
            });
          }
          return;
        }
        void answerMessage(msg, "request", credentials, redactor)
          .catch((failure: unknown) => {
            if (failure instanceof CredentialsUnavailable) return refusedAnswer(failure.code, failure.message);
            deps.log.warn({ exportId: record.id, error: (failure as Error).name }, "pipeline request could not be answered now");
            return refusedAnswer("ERR_PIPELINE_UNAVAILABLE", "the record could not be redacted now; try again");
          })
          .then((reply) => {
            try {
              msg.respond(encodedAnswer(reply, nc.info?.max_payload));
            } catch (failure) {
              deps.log.warn({ exportId: record.id, error: (failure as Error).name }, "pipeline reply not sent");
            }
          });
      },
    });
    const stream = new PipelineStream({ nc, exportId: record.id, redactor, credentials, progress: deps.progress, log: deps.log });
    stream.start();
    const served = new PipelineExport(deps, http, requests, stream);
    // As a port's opening: served only once the record is stored (the HTTP port's is, in listenPipelineHttp).
    const details = {
      exportId: record.id,
      component: "pipeline",
      request: PipelineSubjects.request(record.id),
      input: PipelineSubjects.input(record.id),
      output: PipelineSubjects.output(record.id),
    };
    if (!(await deps.storedAudit("info", "subjects.opened", `pipeline export ${record.id} serving NATS subjects`, details))) {
      await served.close().catch(() => undefined);
      throw new OpeningNotAudited("the audit log did not store the opening of its NATS subjects");
    }
    return served;
  }

  serving(): ExportServing {
    return { ...this.http.serving(), stream: this.stream.progress() };
  }

  async close(): Promise<void> {
    this.requests.unsubscribe();
    await Promise.all([this.http.close(), this.stream.stop()]);
    this.deps.audit("info", "subjects.closed", `pipeline export ${this.deps.record.id} stopped serving NATS subjects`, {
      exportId: this.deps.record.id,
      component: "pipeline",
    });
  }
}

/**
 * Reply subjects the request door answers on: inboxes as NATS clients make them (`_INBOX.` and
 * tokens without wildcards). Anything else gets no answer: docs/pipeline-export.md, "Request/reply".
 */
export function isInboxSubject(reply: string | undefined): boolean {
  return reply !== undefined && /^_INBOX\.[^\s*>]+$/.test(reply) && !reply.split(".").includes("");
}
