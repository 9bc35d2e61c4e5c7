import type { Socket } from "node:net";
import { encodeErrorResponse, errorFields } from "../../../protocols/postgres/error-response";
import { ProtocolError } from "../../../protocols/postgres/wire";
import type { ForwardBuffer } from "../forward-buffer";
import type { OutputBuffer } from "../output-buffer";
import type { SessionCounts } from "../types";
import { IdleWatch } from "./idle-watch";
import type { SessionDeps } from "./session-deps";

/** After end(), a client that does not close is cut off after this long. */
const lingerMs = 2000;

/** startup packet -> (direct verification: the client's password checked by the proxy) -> backend authentication -> the proxy's catalog query (client held) -> ready -> closed. */
export type Phase = "startup" | "verifying" | "authenticating" | "preparing" | "ready" | "closed";

/**
 * The two sockets of one session and its life: where it is (`phase`), what it counted, writes in
 * each direction with their backpressure, and how it ends. Every other part of the session
 * writes and ends through this.
 */
export class Connection {
  phase: Phase = "startup";
  /** Replaced by its TLS socket when the client asks for TLS. */
  client: Socket;
  backend?: Socket;
  identity: { user?: string; database?: string } = {};
  readonly counts: SessionCounts = {
    rowsIn: 0,
    rowsKept: 0,
    rowsDropped: 0,
    valuesNulled: 0,
    statements: 0,
    statementsParsed: 0,
    notificationsDropped: 0,
    refused: 0,
  };
  /** Ends the session after EXPORT_IDLE_TIMEOUT_MS with no traffic either way (none with 0). */
  readonly idle?: IdleWatch;
  private clientHolds = 0;
  /** What the other parts release when the connection closes (timers, waiting promises, cancel keys). */
  private readonly cleanups: Array<() => void> = [];

  constructor(
    readonly deps: SessionDeps,
    client: Socket,
  ) {
    this.client = client;
    const idleMs = deps.limits.idleTimeoutMs;
    // A silent connection keeps its backend connection open too: both go after this long.
    if (idleMs > 0) {
      const idle = (this.idle = new IdleWatch(idleMs, () =>
        this.fatal("57P05", `terminating connection: nothing was sent or received for ${idleMs / 1000} s`),
      ));
      this.whenClosed(() => idle.stop());
    }
  }

  /** A method, not a field test: the phase changes under awaits and callbacks. */
  get closed(): boolean {
    return this.phase === "closed";
  }

  /** Runs `cleanup` when the connection closes, in the order registered. */
  whenClosed(cleanup: () => void): void {
    this.cleanups.push(cleanup);
  }

  /** Holds reading from the client (while the session prepares, the catalog is read, a limited Execute runs). */
  holdClient(): void {
    this.clientHolds++;
    this.client.pause();
  }

  /** Ends one hold (`released` 0: none, the backend drained); reads again only when nothing else holds or waits. */
  releaseClient(released = 1): void {
    this.clientHolds -= released;
    if (this.clientHolds === 0 && !this.backend?.writableNeedDrain) this.client.resume();
  }

  toBackend(out: ForwardBuffer): void {
    const bytes = out.take();
    if (!bytes || this.phase === "closed") return;
    // Only while the backend's TLS is negotiated, before it asked for anything: the client answers a request nobody made.
    if (!this.backend) throw new ProtocolError("a message before the backing store asked for one");
    if (!this.backend.write(bytes)) this.client.pause();
  }

  toClient(out: OutputBuffer): void {
    if (out.size === 0 || this.closed) return;
    if (this.idle) this.idle.traffic = true;
    if (!this.client.write(out.take())) this.backend?.pause();
  }

  /** Refuses what the export does not allow with a FATAL error, audits it, and ends the connection. */
  refuse(sqlState: string, message: string, event: string): void {
    this.counts.refused++;
    this.deps.audit("warn", event, message, {
      exportId: this.deps.exportId,
      connectionId: this.deps.connectionId,
      component: "postgres",
      identity: this.identity.user ?? null,
    });
    this.fatal(sqlState, message);
  }

  /** Ends the connection with a FATAL error the client reads (the connection's trace is recorded as usual). */
  fatal(sqlState: string, message: string): void {
    if (this.closed) return;
    this.endClient(encodeErrorResponse(errorFields("FATAL", sqlState, message)));
    this.close(false);
  }

  /** Ends the client's side after sending `last`; a client that does not close in turn is cut off. */
  endClient(last?: Buffer): void {
    const client = this.client;
    if (last) client.end(last);
    else client.end();
    setTimeout(() => client.destroy(), lingerMs).unref();
  }

  failClient(error: unknown): void {
    if (this.closed) return;
    if (error instanceof ProtocolError) {
      this.deps.audit("warn", "protocol.invalid", `invalid message from the client: ${error.message}`, {
        exportId: this.deps.exportId,
        connectionId: this.deps.connectionId,
        component: "postgres",
      });
      this.fatal("08P01", `invalid message from the client: ${error.message}`);
    } else this.failInternally(error);
  }

  failBackend(error: unknown): void {
    if (this.closed) return;
    if (error instanceof ProtocolError) {
      this.deps.audit("error", "protocol.backend-invalid", `the backend broke the protocol: ${error.message}`, {
        exportId: this.deps.exportId,
        connectionId: this.deps.connectionId,
      });
      this.fatal("08P01", "the export lost its backing store connection");
    } else this.failInternally(error);
  }

  /** An unexpected failure: the client learns only that the export failed (no internal text). */
  private failInternally(error: unknown): void {
    this.deps.audit("error", "connection.failed", `connection ${this.deps.connectionId} failed inside the export`, {
      exportId: this.deps.exportId,
      connectionId: this.deps.connectionId,
      error: String((error as Error)?.message ?? error),
    });
    this.fatal("XX000", "the export failed to process this connection");
  }

  close(destroyClient = true): void {
    if (this.closed) return;
    this.phase = "closed";
    for (const cleanup of this.cleanups) cleanup();
    if (destroyClient) this.client.destroy();
    this.backend?.destroy();
    this.deps.onEnd(this.counts, this.identity);
  }
}
