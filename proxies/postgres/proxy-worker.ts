import type { Socket } from "node:net";
import { createSecureContext, type SecureContext } from "node:tls";
import { VerdictInterner } from "../../decision/verdicts";
import { CancelKeys, honourCancel, type CancelTarget } from "./cancel-keys";
import { RemoteDecider } from "./remote-decider";
import { VerdictWatch, type PushdownVerdicts } from "./verdict-watch";
import { addRowCounts, emptyRowCounts } from "../../exports/row-counts";
import { readThroughBuffer } from "./client-reads";
import { fatalMessage, ProxySession } from "./session";
import { UserIdMemo } from "./user-id-memo";
import { loadSqlParser } from "./analysis/sql-parser";
import { sharedAnalyses } from "./analysis/analysis-cache";
import type { DirectVerification, ProxyAudit, ProxyStoredAudit } from "./types";
import type { DecideAnswer, FromWorker, LiveCounts, ToWorker, VerifyAnswer, WorkerExport } from "./worker-messages";

/**
 * A proxy worker process: runs the sessions of the export connections its serving node hands
 * it, on an event loop of its own. Decisions, verification, audit and traces stay the node's:
 * each is a message to it. Without the node nothing is decided, so a worker whose channel to
 * the node closes ends its connections and exits.
 */

/** Live counts go to the node this often while an export has sessions here (GET /export). */
const liveEveryMs = 1000;

interface ServedHere {
  settings: WorkerExport;
  /** Pushdown: the verdict tables of the databases this worker's sessions use, fed by the node. */
  verdicts: Map<string, VerdictWatch>;
  decider: RemoteDecider;
  cancelKeys: CancelKeys;
  userIds: UserIdMemo;
  sessions: Set<ProxySession>;
  /** The last live counts sent (sent again only when they change). */
  sent: string;
}

const servedExports = new Map<string, ServedHere>();
const verdicts = new VerdictInterner();
const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
let nextRequestId = 1;
let tls: SecureContext | undefined;
let slot = 0;
let slots = 1;

function send(message: FromWorker): void {
  if (process.connected) process.send!(message);
}

function request<T>(message: FromWorker & { requestId: number }): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (!process.connected) return reject(new Error("the serving node is gone"));
    pending.set(message.requestId, { resolve: resolve as (value: unknown) => void, reject });
    process.send!(message);
  });
}

function liveCounts(served: ServedHere): LiveCounts {
  const live = emptyRowCounts();
  for (const session of served.sessions) addRowCounts(live, session.counts);
  return live;
}

function audit(exportId: string): ProxyAudit {
  return (level, event, message, details) => send({ kind: "audit", exportId, level, event, message, details });
}

/** Answered by the node once its audit log stored the record (false when it did not, or the node is gone). */
function storedAudit(exportId: string): ProxyStoredAudit {
  return (level, event, message, details) =>
    request<boolean>({ kind: "stored-audit", requestId: nextRequestId++, exportId, level, event, message, details }).then(
      (stored) => stored === true,
      () => false,
    );
}

function cancelTarget(settings: WorkerExport): CancelTarget {
  return { exportId: settings.exportId, backend: settings.backend, limits: settings.limits, audit: audit(settings.exportId) };
}

function directVerification(settings: WorkerExport): DirectVerification | undefined {
  if (!settings.directVerification) return undefined;
  return {
    backendIdentity: settings.directVerification.backendIdentity,
    verify: (user, password, connectionId) =>
      request<VerifyAnswer>({ kind: "verify", requestId: nextRequestId++, exportId: settings.exportId, user, password, connectionId }),
  };
}

function serve(settings: WorkerExport): void {
  const known = servedExports.get(settings.exportId);
  if (known) {
    known.settings = settings;
    known.decider.remap(settings.mapping);
    return;
  }
  const decider = new RemoteDecider(settings.mapping, verdicts, (userIds) =>
    request<DecideAnswer>({ kind: "decide", requestId: nextRequestId++, exportId: settings.exportId, userIds: [...userIds] }),
  );
  servedExports.set(settings.exportId, {
    settings,
    decider,
    verdicts: new Map(),
    cancelKeys: new CancelKeys(slot, slots),
    userIds: new UserIdMemo(),
    sessions: new Set(),
    sent: "",
  });
}

/** The node's verdict tables as this worker's sessions see them: asked for per database, then fed by the node. */
function remoteVerdicts(served: ServedHere): PushdownVerdicts {
  return {
    of(database) {
      let watch = served.verdicts.get(database);
      if (!watch) {
        watch = new VerdictWatch();
        served.verdicts.set(database, watch);
        send({ kind: "verdicts-wanted", exportId: served.settings.exportId, database });
      }
      return watch;
    },
  };
}

function accept(exportId: string, connectionId: string, socket: Socket | undefined): void {
  if (!socket) return;
  const served = servedExports.get(exportId);
  socket.on("error", () => socket.destroy());
  if (!served) {
    // Closed between the hand-over and now.
    socket.end(fatalMessage("57P01", "the export stopped"));
    return;
  }
  const { settings } = served;
  // Read into one buffer (client-reads.ts); the session exists before the first read (same tick).
  let reading: ProxySession | undefined;
  const client = readThroughBuffer(socket, (chunk) => (reading ? reading.clientBytes(chunk) : client?.destroy()));
  client?.on("error", () => client.destroy());
  const session: ProxySession = new ProxySession(client ?? socket, {
    exportId,
    connectionId,
    backend: settings.backend,
    limits: settings.limits,
    decider: served.decider,
    audit: audit(exportId),
    storedAudit: storedAudit(exportId),
    cancelKeys: served.cancelKeys,
    cancel: (keys, cancelling) => {
      if (served.cancelKeys.slotOf(keys) !== slot) send({ kind: "cancel", exportId, keys, connectionId: cancelling });
      else honourCancel(served.cancelKeys, keys, cancelTarget(settings), cancelling);
    },
    tls,
    directVerification: directVerification(settings),
    userIds: served.userIds,
    policy: settings.policy,
    pushdown: settings.policy.pushdown && remoteVerdicts(served),
    analyses: sharedAnalyses,
    onLoggedIn: () => send({ kind: "logged-in", exportId, connectionId }),
    onEnd: (counts, identity) => {
      served.sessions.delete(session);
      const live = liveCounts(served);
      served.sent = JSON.stringify(live);
      send({ kind: "ended", exportId, connectionId, counts, identity, live });
    },
  });
  reading = session;
  served.sessions.add(session);
}

function closeExport(exportId: string, requestId: number): void {
  const served = servedExports.get(exportId);
  servedExports.delete(exportId);
  if (served) {
    for (const session of [...served.sessions]) session.close();
  }
  send({ kind: "export-closed", requestId });
}

function onMessage(message: ToWorker, handle: unknown): void {
  switch (message.kind) {
    case "init":
      slot = message.slot;
      slots = message.slots;
      tls = message.tls && createSecureContext({ cert: Buffer.from(message.tls.cert), key: Buffer.from(message.tls.key) });
      // Ready once PostgreSQL's parser is loaded: every statement is parsed.
      void loadSqlParser().then(() => send({ kind: "ready" }));
      return;
    case "export":
      serve(message);
      return;
    case "mapping":
      servedExports.get(message.exportId)?.decider.remap(message.mapping);
      return;
    case "connection":
      accept(message.exportId, message.connectionId, handle as Socket | undefined);
      return;
    case "user-changed":
      for (const served of servedExports.values()) served.decider.forget(message.userId);
      return;
    case "users-reset":
      for (const served of servedExports.values()) served.decider.forgetAll();
      return;
    case "close-export":
      closeExport(message.exportId, message.requestId);
      return;
    case "cancel": {
      const served = servedExports.get(message.exportId);
      if (served) honourCancel(served.cancelKeys, message.keys, cancelTarget(served.settings), message.connectionId);
      return;
    }
    case "verdicts":
      servedExports.get(message.exportId)?.verdicts.get(message.database)?.set(message.state);
      return;
    case "answer": {
      const waiting = pending.get(message.requestId);
      pending.delete(message.requestId);
      if (message.error !== undefined) waiting?.reject(new Error(message.error));
      else waiting?.resolve(message.value);
      return;
    }
  }
}

/** Without its node a worker cannot decide anything: every connection ends (FATAL 08006), then the process. */
function shutDown(): void {
  for (const waiting of pending.values()) waiting.reject(new Error("the serving node is gone"));
  pending.clear();
  for (const served of servedExports.values()) for (const session of [...served.sessions]) session.fatal("08006", "the export's serving node stopped");
  // Long enough for the FATAL messages to be written.
  setTimeout(() => process.exit(0), 200).unref();
}

process.on("message", onMessage);
process.on("disconnect", shutDown);
process.on("SIGTERM", shutDown);
// Ctrl-C reaches the whole process group: the node decides when its workers stop.
process.on("SIGINT", () => undefined);
setInterval(() => {
  for (const [exportId, served] of servedExports) {
    const live = liveCounts(served);
    const text = JSON.stringify(live);
    if (text === served.sent) continue;
    served.sent = text;
    send({ kind: "live", exportId, live });
  }
}, liveEveryMs).unref();
