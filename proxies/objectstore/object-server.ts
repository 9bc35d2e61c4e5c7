import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import type { Transform } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { connectionsRefused, doorApp } from "../../http/door-app";
import { streamedBody } from "../../http/streamed-body";
import type { HttpListenerLimits } from "../../http/listener-limits";
import type { HostCheckSettings } from "../../http/host-check";
import type { Logger } from "pino";
import type { ExportRecord, RangedReads } from "../../actors/export/export-actor";
import type { EventLog } from "../../actors/runtime/event-log";
import type { ExportServing } from "../../api/types";
import { component } from "../../auth/components";
import type { OverridesByVerifier } from "../../auth/types";
import { flowOf } from "../../decision/engine";
import { announceOpening, type ExportAudit, type StoredAudit } from "../../exports/door";
import type { ExportDecider } from "../../exports/export-decider";
import { authentication, domainOf, type HttpAuthentication } from "../../http/authentication";
import { contentDecoder, decodedCodings } from "../../http/content-coding";
import type { CsvThreading, DocumentFormat, RedactionTally } from "../../redaction/types";
import { formatOf } from "./object-formats";
import type { ObjectStore } from "./object-store";
import { discardStored, rangedReadsOf, storedObject, type StoredObject } from "./ranged-body";
import { redactedEtag, redactedObject } from "./redacted-object";
import { S3Error, s3ErrorDocument, s3ErrorOf } from "./s3-errors";
import { s3OperationOf, storePath, storeQuery, virtualHostBucket, type S3Operation } from "./s3-operation";
import { onlyBuckets, passedHeaders, readSmall, storeFailure } from "./store-answers";

export interface ObjectServerOptions {
  record: ExportRecord;
  host: string;
  store: ObjectStore;
  decider: ExportDecider;
  auth: HttpAuthentication;
  audit: ExportAudit;
  /** For `port.opened`: the port serves only once it is stored. */
  storedAudit: StoredAudit;
  events: EventLog;
  nodeId: string;
  logger: Logger;
  threading: CsvThreading;
  tls?: { cert: Buffer; key: Buffer };
  overrides?: OverridesByVerifier;
  /** The listener's timeouts and connection cap (absent: the defaults). */
  listenerLimits?: HttpListenerLimits;
  /** ALLOWED_HOSTS and the refusal counter (http/host-check.ts). */
  hostCheck?: HostCheckSettings;
}

/** Headers of a write that pass to the store with its body (never the client's signature or host). */
const writeHeaders = [
  "content-type",
  "content-length",
  "content-md5",
  "cache-control",
  "content-disposition",
  "content-encoding",
  "content-language",
  "expires",
  "x-amz-storage-class",
  "x-amz-tagging",
  "x-amz-metadata-directive",
  "x-amz-copy-source",
  "x-amz-checksum-crc32",
  "x-amz-checksum-crc32c",
  "x-amz-checksum-sha1",
  "x-amz-checksum-sha256",
  "x-amz-sdk-checksum-algorithm",
];
/** Headers of a store's answer to a write or a HEAD that pass back. */
const answerHeaders = ["content-type", "etag", "x-amz-version-id", "last-modified", "content-length"];

/** Per-request ids in S3's shape (16 upper-case hex digits), in x-amz-request-id and every error document. */
function requestId(): string {
  return randomBytes(8).toString("hex").toUpperCase();
}

/**
 * The S3 door of an object-storage export (path-style, its own port): GetObject of documents
 * redacted as they stream, HeadObject, HeadBucket, ListObjectsV2 and ListBuckets passed, writes
 * passed only with allowWrites, everything else NotImplemented; every error an S3 XML document.
 */
export class ObjectServer {
  private readonly since = new Date().toISOString();
  private readonly sockets = new Set<Socket>();
  private total = 0;
  private readonly rows = { in: 0, kept: 0, dropped: 0, valuesNulled: 0 };
  private readonly allowedBuckets?: ReadonlySet<string>;

  private constructor(
    private readonly app: FastifyInstance,
    private readonly options: ObjectServerOptions,
  ) {
    this.allowedBuckets = options.record.buckets ? new Set(options.record.buckets) : undefined;
    app.server.on(options.tls ? "secureConnection" : "connection", (socket: Socket) => {
      this.total++;
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
  }

  static async listen(options: ObjectServerOptions): Promise<ObjectServer> {
    // Objects of any size stream both ways: no whole-request deadline.
    const app = doorApp({
      exportId: options.record.id,
      component: "objectstore",
      tls: options.tls,
      listenHost: options.host,
      // Virtual-host requests name their bucket below the export host (s3-operation.ts virtualHostBucket).
      hostNames: [`*.${options.host}`],
      hostCheck: options.hostCheck,
      logger: options.logger,
      audit: options.audit,
      limits: options.listenerLimits,
      streaming: true,
      fastify: { genReqId: requestId, exposeHeadRoutes: false },
    });
    const server = new ObjectServer(app, options);
    server.routes();
    await app.listen({ host: options.host, port: options.record.listen.port });
    const { record } = options;
    await announceOpening(
      options.storedAudit,
      `objectstore export ${record.id} listening on ${options.host}:${record.listen.port}`,
      {
        exportId: record.id,
        component: "objectstore",
        host: options.host,
        port: record.listen.port,
        tls: options.tls !== undefined,
      },
      () => server.close(),
    );
    return server;
  }

  private routes(): void {
    const { app, options } = this;
    app.removeAllContentTypeParsers();
    // Bodies reach the handler unread: a write streams to the store as it arrives.
    app.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
    app.addHook("onRequest", (request, reply, done) => {
      void reply.header("x-amz-request-id", request.id);
      done();
    });
    app.setErrorHandler((error, request, reply) => this.answerError(error, request, reply));
    void app.register(authentication, {
      auth: options.auth,
      overrides: options.overrides,
      signing: "s3",
      componentOf: (request) => component("objectstore", domainOf(request)),
      // Reading objects is objectstore:read; writing them (allowWrites exports) objectstore:write (docs/authorization.md).
      permissionOf: (request) => ({ component: "objectstore", action: request.method === "GET" || request.method === "HEAD" ? "read" : "write" }),
    });
    void app.register(async (scope) => {
      const handler = (request: FastifyRequest, reply: FastifyReply) => this.handle(request, reply);
      for (const url of ["/", "/*"]) scope.route({ method: ["GET", "HEAD", "PUT", "DELETE", "POST"], url, config: { streamedBody: true }, handler });
    });
  }

  private answerError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    const s3 = s3ErrorOf(error);
    if (s3.refusal && error instanceof S3Error) {
      const { record } = this.options;
      this.options.audit("warn", "request.refused", `${request.method} ${request.url.split("?")[0]} refused: ${s3.message}`, {
        exportId: record.id,
        component: "objectstore",
        requestId: request.id,
        connectionId: request.access?.connectionId,
        subject: request.access?.subject ?? null,
        code: s3.code,
        status: s3.status,
        remote: request.ip,
      });
    } else if (s3.status >= 500)
      this.options.logger.warn({ exportId: this.options.record.id, requestId: request.id, code: s3.code, err: error }, "objectstore request failed");
    if (reply.sent || reply.raw.headersSent) {
      reply.raw.destroy();
      return;
    }
    void reply.code(s3.status).type("application/xml");
    if (request.method === "HEAD") void reply.send();
    else void reply.send(s3ErrorDocument(s3, request.id, request.url.split("?")[0]!));
  }

  private async handle(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const operation = s3OperationOf(request.method, request.url, request.headers, virtualHostBucket(request.headers.host, this.options.host));
    this.checkBuckets(operation);
    // The store's request lives as long as the client's answer: a client that goes away aborts it.
    const abort = new AbortController();
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const { store, record } = this.options;
    const signal = abort.signal;
    switch (operation.kind) {
      case "ListBuckets": {
        const answer = await store.send({ method: "GET", path: "/", signal });
        if (answer.statusCode !== 200) throw await storeFailure(answer);
        const document = await readSmall(answer);
        return reply.type("application/xml").send(this.allowedBuckets ? onlyBuckets(document, this.allowedBuckets) : document);
      }
      case "ListObjectsV2": {
        const answer = await store.send({ method: "GET", path: `${storePath(operation.bucket)}/`, query: storeQuery(operation.query), signal });
        if (answer.statusCode !== 200) throw await storeFailure(answer);
        return reply.type("application/xml").send(answer);
      }
      case "HeadBucket": {
        const answer = await store.send({ method: "HEAD", path: storePath(operation.bucket), signal });
        answer.resume();
        if (answer.statusCode !== 200) throw S3Error.fromStore(answer.statusCode ?? 502, "");
        return reply.code(200).send();
      }
      case "HeadObject": {
        this.refuseRange(request);
        const answer = await store.send({ method: "HEAD", path: storePath(operation.bucket, operation.key), signal });
        answer.resume();
        if (answer.statusCode !== 200) throw S3Error.fromStore(answer.statusCode ?? 502, "");
        const mapping = this.options.decider.mapping();
        return reply
          .headers({
            ...passedHeaders(answer, ["content-type", "content-length"]),
            etag: redactedEtag(record.id, mapping.key, answer),
            "last-modified": new Date().toUTCString(),
            "cache-control": "no-store",
            "accept-ranges": "none",
          })
          .send();
      }
      case "GetObject":
        return this.getObject(request, reply, operation, signal);
      default:
        return this.write(request, reply, operation, signal);
    }
  }

  private async getObject(
    request: FastifyRequest,
    reply: FastifyReply,
    operation: Extract<S3Operation, { kind: "GetObject" }>,
    signal: AbortSignal,
  ): Promise<unknown> {
    this.refuseHttp10(request);
    this.refuseRange(request);
    const { decider, record } = this.options;
    let plan = decider.recordPlan();
    if (!plan) {
      await decider.warm().catch(() => undefined);
      plan = decider.recordPlan();
    }
    // No configuration, or the mapping group is gone: nothing can be decided, nothing is released.
    if (!plan) throw new S3Error("ServiceUnavailable", "the export cannot decide now (no configuration, or its mapping group is gone); nothing was released");
    const mappingKey = decider.mapping().key;
    const path = storePath(operation.bucket, operation.key);
    let document = await this.storedDocument(path, operation.key, rangedReadsOf(record.rangedReads), signal);
    // A compressed object decodes as one stream, from its first byte: read in one GET (the store's first range is dropped).
    if (document.decoder && document.stored.ranged) {
      discardStored(document.stored);
      document = await this.storedDocument(path, operation.key, rangedReadsOf({ parallel: 1 }), signal);
    }
    const { stored: fetched, format, decoder } = document;
    const { answer: stored, length, ranged } = fetched;
    const started = Date.now();
    const redacted = await redactedObject({
      exportId: record.id,
      stored,
      format,
      decider,
      plan,
      mappingKey,
      threading: this.options.threading,
      length,
      ...(ranged ? { ranged } : {}),
      ...(decoder ? { decoder } : {}),
      signal,
      onEnd: (outcome, tally, error) => this.objectEnded(request, operation, format, outcome, tally, error, Date.now() - started),
    });
    // The answer is written here, not by Fastify: each output is given back to the redactor once sent.
    reply.hijack();
    await redacted.send(reply.raw, { ...reply.getHeaders(), ...redacted.headers });
    return reply;
  }

  /**
   * The store's answer for a GetObject, checked before anything is redacted: a store error becomes
   * the client's, an object of no document format or of a content coding the export does not
   * decode is refused (its answer dropped); a compressed one comes with its decoder.
   */
  private async storedDocument(
    path: string,
    key: string,
    reads: RangedReads,
    signal: AbortSignal,
  ): Promise<{ stored: StoredObject; format: DocumentFormat; decoder: (() => Transform) | null }> {
    const stored = await storedObject(this.options.store, path, reads, signal);
    const { answer } = stored;
    // A 206 is a range storedObject checked (the whole object, or the first of several).
    if (answer.statusCode !== 200 && answer.statusCode !== 206) throw await storeFailure(answer);
    const format = formatOf(answer.headers["content-type"], key, this.options.record.formats);
    if (!format) {
      discardStored(stored);
      throw new S3Error(
        "AccessDenied",
        `'${key}' is not a document this export redacts (CSV, JSON array or NDJSON by content type, then key suffix); it is not served`,
      );
    }
    const decoder = contentDecoder(answer.headers["content-encoding"]);
    if (decoder === undefined) {
      discardStored(stored);
      throw new S3Error("AccessDenied", `'${key}' is stored in a content coding this export does not decode (it decodes ${decodedCodings}); it is not served`);
    }
    return { stored, format, decoder };
  }

  /** Counts a document's rows and traces its summary (no values): how many rows of how many users went out, and how it ended. */
  private objectEnded(
    request: FastifyRequest,
    operation: { bucket: string; key: string },
    format: string,
    outcome: string,
    tally: RedactionTally | undefined,
    error: Error | undefined,
    ms: number,
  ): void {
    const { record, events, nodeId, logger } = this.options;
    if (tally) {
      this.rows.in += tally.rowsIn;
      this.rows.kept += tally.rowsKept;
      this.rows.dropped += tally.rowsIn - tally.rowsKept;
      this.rows.valuesNulled += Object.values(tally.fields).reduce((sum, field) => sum + field.emptied, 0);
    }
    if (error) logger.warn({ exportId: record.id, requestId: request.id, bucket: operation.bucket, err: error }, "objectstore document cut off");
    // The summary answers nobody: a failure to store it is logged and counted by the event log.
    void events.trace("export", flowOf(record.metadata.type), {
      kind: "export.object",
      time: new Date().toISOString(),
      nodeId,
      exportId: record.id,
      requestId: request.id,
      connectionId: request.access?.connectionId ?? null,
      identity: request.access?.subject ?? null,
      purposeId: record.metadata.purposeId,
      type: record.metadata.type,
      mappingGroup: record.resolverGroup,
      bucket: operation.bucket,
      key: operation.key,
      format,
      outcome,
      ms,
      ...(tally ? { rowsIn: tally.rowsIn, rowsKept: tally.rowsKept, droppedBy: tally.droppedBy, bytesIn: tally.bytesIn, bytesOut: tally.bytesOut } : {}),
      ...(error ? { error: error.name === "DocumentError" ? (error as { code?: string }).code : error.name } : {}),
    });
  }

  private async write(
    request: FastifyRequest,
    reply: FastifyReply,
    operation: Extract<S3Operation, { kind: "PutObject" | "DeleteObject" | "CopyObject" }>,
    signal: AbortSignal,
  ): Promise<unknown> {
    const { record, store } = this.options;
    if (!record.allowWrites) throw new S3Error("AccessDenied", `${operation.kind} is refused: this export is read-only (allowWrites is off)`);
    if (/aws-chunked/i.test(String(request.headers["content-encoding"] ?? ""))) {
      throw new S3Error(
        "NotImplemented",
        "aws-chunked uploads (streaming signatures, trailing checksums) are not passed; send the body as it is (SDK: requestChecksumCalculation WHEN_REQUIRED)",
      );
    }
    const headers: Record<string, string> = {};
    for (const name of writeHeaders) {
      const value = request.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    for (const [name, value] of Object.entries(request.headers)) if (name.startsWith("x-amz-meta-") && typeof value === "string") headers[name] = value;
    const method = operation.kind === "DeleteObject" ? "DELETE" : "PUT";
    const body = operation.kind === "PutObject" ? streamedBody(request.body) : undefined;
    if (body === undefined && operation.kind === "PutObject") headers["content-length"] = "0";
    const answer = await store.send({ method, path: storePath(operation.bucket, operation.key), headers, ...(body ? { body } : {}), signal });
    const status = answer.statusCode ?? 502;
    if (status >= 300) throw await storeFailure(answer);
    const { "content-length": _length, ...passed } = passedHeaders(answer, answerHeaders);
    return reply.code(status).headers(passed).send(answer);
  }

  /** Byte ranges of a redacted document would be ranges of other bytes than the stored ones: not served. */
  /**
   * A redacted document streams without a length, and a failure midway cuts it off: HTTP/1.1's chunked
   * framing lets the client tell that from a complete document, HTTP/1.0 has no such framing (the
   * connection's close ends both alike), so a document would look complete when it was cut off.
   */
  private refuseHttp10(request: FastifyRequest): void {
    if (request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor === 0)
      throw new S3Error(
        "HttpVersionNotSupported",
        "GetObject needs HTTP/1.1: a redacted document is sent chunked, so that one cut off by a failure is never taken for a complete one",
        { status: 505 },
      );
  }

  private refuseRange(request: FastifyRequest): void {
    if (request.headers.range !== undefined)
      throw new S3Error("NotImplemented", "Range requests are not served: a redacted document has other bytes than the stored object; read it whole");
  }

  /** `buckets` limits what clients see and use: any other bucket is refused, a copy's source included. */
  private checkBuckets(operation: S3Operation): void {
    const allowed = this.allowedBuckets;
    if (!allowed || operation.kind === "ListBuckets") return;
    const named = operation.kind === "CopyObject" ? [operation.bucket, operation.source.bucket] : [operation.bucket];
    const refused = named.find((bucket) => !allowed.has(bucket));
    if (refused !== undefined) throw new S3Error("AccessDenied", `bucket '${refused}' is not served by this export`);
  }

  serving(): ExportServing {
    const { record, host } = this.options;
    return {
      host,
      port: record.listen.port,
      since: this.since,
      connections: { open: this.sockets.size, total: this.total, refused: connectionsRefused(this.app) },
      rows: { ...this.rows },
    };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await this.app.close();
    const { record, host } = this.options;
    this.options.audit("info", "port.closed", `objectstore export ${record.id} stopped listening on ${host}:${record.listen.port}`, {
      exportId: record.id,
      component: "objectstore",
      host,
      port: record.listen.port,
    });
  }
}
