import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { JsonDepthError, skipWhitespace, valueEnd } from "../../redaction/json-scan";
import { component } from "../../auth/components";
import type { OverridesByVerifier } from "../../auth/types";
import { authentication, domainOf } from "../../http/authentication";
import { HttpDoorPort } from "../../http/door-port";
import { installErrorHandling } from "../../http/error-handler";
import { HttpError } from "../../http/errors";
import { doorApp } from "../../http/door-app";
import { streamedBody } from "../../http/streamed-body";
import type { HttpListenerLimits } from "../../http/listener-limits";
import type { HostCheckSettings } from "../../http/host-check";
import type { HttpAuthentication } from "../../http/authentication";
import type { ExportAudit, StoredAudit } from "../../exports/door";
import { ndjsonBatches } from "./ndjson-lines";
import type { PipelineAnswer, RecordCounts, RecordRedactor } from "./types";
import { refusedAnswer } from "./refused";

export interface PipelineHttpLimits {
  /** One JSON record (a POST body, an NDJSON line). */
  maxRecordBytes: number;
  /** Nesting of objects and arrays within one record. */
  maxDepth: number;
}

export const defaultPipelineHttpLimits: PipelineHttpLimits = { maxRecordBytes: 1024 * 1024, maxDepth: 32 };

export interface PipelineHttpOptions {
  exportId: string;
  host: string;
  port: number;
  redactor: RecordRedactor;
  counts: RecordCounts;
  auth: HttpAuthentication;
  audit: ExportAudit;
  /** For `port.opened`: the port serves only once it is stored. */
  storedAudit: StoredAudit;
  logger: Logger;
  tls?: { cert: Buffer; key: Buffer };
  limits?: PipelineHttpLimits;
  /** The export's own verifier settings (an OAuth audience), as its NATS doors use them. */
  overrides?: OverridesByVerifier;
  /** Timeouts and connection cap of the port (streams: no whole-request deadline); absent: the defaults. */
  listenerLimits?: HttpListenerLimits;
  /** ALLOWED_HOSTS and the refusal counter (http/host-check.ts). */
  hostCheck?: HostCheckSettings;
}

const ndjson = "application/x-ndjson";

/** One NDJSON line as a record: refused (with its line number, never its bytes) when it is not one JSON object within the limits. */
function recordOfLine(bytes: Buffer, number: number, limits: PipelineHttpLimits): { record: unknown } | { refused: PipelineAnswer } {
  try {
    valueEnd(bytes, skipWhitespace(bytes, 0), limits.maxDepth, true);
    return { record: JSON.parse(bytes.toString("utf8")) as unknown };
  } catch (error) {
    const why = error instanceof JsonDepthError ? `line ${number} nests deeper than ${limits.maxDepth} levels` : `line ${number} is not JSON`;
    return { refused: refusedAnswer("ERR_PIPELINE_RECORD_INVALID", why) };
  }
}

/**
 * The HTTP door of a pipeline export (its own port): POST one JSON record and get its answer
 * at once, or POST an NDJSON stream and get an NDJSON stream back, one answer per line in
 * order, read only as fast as the answers are taken (backpressure). Credentials as on the
 * gateway, selected for component `pipeline`.
 */
export function buildPipelineApp(options: PipelineHttpOptions): FastifyInstance {
  const limits = options.limits ?? defaultPipelineHttpLimits;
  const app = doorApp({
    exportId: options.exportId,
    component: "pipeline",
    tls: options.tls,
    refuseOtherSites: true,
    listenHost: options.host,
    hostCheck: options.hostCheck,
    logger: options.logger,
    audit: options.audit,
    limits: options.listenerLimits,
    streaming: true,
    fastify: { bodyLimit: limits.maxRecordBytes },
  });
  installErrorHandling(app);
  void app.register(authentication, {
    auth: options.auth,
    overrides: options.overrides,
    componentOf: (request) => (request.routeOptions.url ? component("pipeline", domainOf(request)) : undefined),
    // Sending records and reading their redacted form is one permission: pipeline:read (docs/authorization.md).
    permissionOf: () => ({ component: "pipeline", action: "read" }),
  });
  void app.register(async (scope) => {
    // Streams reach the handler unparsed; single records are parsed by Fastify's JSON parser.
    scope.addContentTypeParser(ndjson, (_request, payload, done) => done(null, payload));
    scope.post("/", { config: { streamedBody: true } }, async (request, reply) => {
      const mediaType = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (mediaType === "application/json") {
        const [answer] = await options.redactor.redactAll([request.body]).catch((error: unknown) => {
          throw new HttpError("ERR_PIPELINE_UNAVAILABLE", undefined, undefined, { cause: error });
        });
        if ("error" in answer!)
          throw new HttpError(
            answer.error.code === "ERR_PIPELINE_RECORD_INVALID" ? "ERR_PIPELINE_RECORD_INVALID" : "ERR_PIPELINE_UNAVAILABLE",
            answer.error.message,
          );
        return answer;
      }
      if (mediaType !== ndjson) throw new HttpError("ERR_REQUEST_CONTENT_TYPE", `send one record as application/json or a stream as ${ndjson}`);
      // A signed body is checked when its last byte arrives: too late for answers already streamed back.
      if (/^aws4-hmac-sha256 /i.test(request.headers.authorization ?? "") || /[?&]X-Amz-Algorithm=/i.test(request.url)) {
        throw new HttpError("ERR_AUTH_UNSUPPORTED", "cloud-signed requests may send one record (application/json), not a stream");
      }
      const redactor = options.redactor;
      async function* answers(): AsyncGenerator<string> {
        // With a content type, Fastify always runs its parser: an NDJSON request has a stream.
        const stream = streamedBody(request.body);
        if (!stream) throw new TypeError("an NDJSON request without its stream");
        for await (const batch of ndjsonBatches(stream, limits.maxRecordBytes)) {
          const out: PipelineAnswer[] = new Array(batch.length);
          const records: unknown[] = [];
          const places: number[] = [];
          batch.forEach((line, index) => {
            if ("overlong" in line)
              out[index] = refusedAnswer("ERR_PIPELINE_RECORD_INVALID", `line ${line.number} is longer than ${limits.maxRecordBytes} bytes`);
            else {
              const parsed = recordOfLine(line.bytes, line.number, limits);
              if ("refused" in parsed) out[index] = parsed.refused;
              else {
                records.push(parsed.record);
                places.push(index);
              }
            }
          });
          // Nothing decidable now: these lines say so and the stream goes on (the client may send them again).
          const redacted = await redactor
            .redactAll(records)
            .catch(() => records.map(() => refusedAnswer("ERR_PIPELINE_UNAVAILABLE", "the record could not be decided now; send it again")));
          places.forEach((place, index) => (out[place] = redacted[index]!));
          yield out.map((answer) => `${JSON.stringify(answer)}\n`).join("");
        }
      }
      return reply.type(ndjson).send(Readable.from(answers()));
    });
  });
  return app;
}

/** A pipeline export's listening HTTP port. */
export function listenPipelineHttp(options: PipelineHttpOptions): Promise<HttpDoorPort> {
  const { counts } = options;
  return HttpDoorPort.listen(buildPipelineApp(options), {
    exportId: options.exportId,
    component: "pipeline",
    host: options.host,
    port: options.port,
    tls: options.tls !== undefined,
    audit: options.audit,
    storedAudit: options.storedAudit,
    rows: () => ({ in: counts.in, kept: counts.kept, dropped: counts.dropped, valuesNulled: counts.valuesNulled }),
  });
}
