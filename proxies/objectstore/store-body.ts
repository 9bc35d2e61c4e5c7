import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { socketReadingInto, takeHandle } from "../../exports/handle-takeover";
import type { DirectInput, InputSink } from "../../redaction/direct-input";
import { storeIdleMs } from "./object-store";

/** Where a read lands when no sink gives room (before the first one, after the end): copied out before it is handed on. */
const parkingBytes = 16 << 10;

/**
 * The store's answer body, read off its connection straight into the room a sink gives (the
 * redactor's block buffer): the connection's handle moves out of Node's HTTP client, once that
 * has parsed the status line and headers, into a socket made with `onread` (as client-reads.ts
 * does for handed-over client sockets), whose every read lands where the sink asked. Framing is
 * the `Content-Length` only: bytes are counted, never parsed. The body ends with its last byte
 * (the connection is then closed, never reused); fewer bytes before the connection ends, or more
 * than the length in a read, fail it. Silence for the store's idle limit (`idleMs`, the HTTP
 * client's for the headers) fails it, paused or not, as a client
 * request that ends (`signal`) does. docs/objectstore-export.md.
 */
export class StoreBody implements DirectInput {
  private sink?: InputSink;
  private received: number;
  private paused = true;
  private outcome?: { error?: Error };
  private readonly socket: Socket;
  private readonly parking = Buffer.allocUnsafeSlow(parkingBytes);
  private readonly abort: () => void;

  constructor(
    handle: object,
    /** Body bytes the HTTP client had read with the headers. */
    private readonly pending: Buffer[],
    private readonly length: number,
    private readonly signal: AbortSignal,
    idleMs: number,
  ) {
    this.received = 0;
    this.socket = socketReadingInto(
      handle,
      { buffer: () => this.nextRoom(), callback: (length: number, buffer: Uint8Array) => this.read((buffer as Buffer).subarray(0, length)) },
      // No read before a sink asks (resume): reads would otherwise land in the parking buffer.
      { pauseOnCreate: true },
    );
    this.socket.setTimeout(idleMs, () => this.fail(new Error(`the store sent nothing for ${idleMs / 1000} s`)));
    this.socket.on("error", (error) => this.fail(error));
    const cut = () => this.fail(new Error(`the store's connection ended after ${this.received} of the body's ${this.length} bytes`));
    this.socket.on("end", cut);
    this.socket.on("close", cut);
    this.abort = () => this.fail(new Error("the client's request ended before the store's answer"));
    if (signal.aborted) this.abort();
    else signal.addEventListener("abort", this.abort, { once: true });
  }

  readInto(sink: InputSink): void {
    this.sink = sink;
    if (this.outcome) sink.ended(this.outcome.error);
  }

  pause(): void {
    this.paused = true;
    if (!this.outcome) this.socket.pause();
  }

  resume(): void {
    if (this.outcome) return;
    this.paused = false;
    while (!this.paused && this.pending.length > 0) this.deliver(this.pending.shift()!);
    if (!this.paused && !this.outcome) this.socket.resume();
  }

  destroy(error?: Error): void {
    this.fail(error ?? new Error("the store's body was not read to its end"));
  }

  /**
   * Where the socket's next read lands: the sink's room while the body goes on and is not stopped.
   * Node asks right after each read, not when the next one comes: a room asked for while stopped
   * would be stale by the time reading resumes (the bytes kept meanwhile are handed on first and fill
   * it), so a stopped socket is given the parking buffer, copied out on its first read after resume.
   */
  private nextRoom(): Buffer {
    return this.sink && !this.outcome && !this.paused ? this.sink.room() : this.parking;
  }

  /** A read; false stops reading (Node pauses the socket). */
  private read(bytes: Buffer): boolean {
    if (this.outcome) return false;
    if (!this.sink || this.paused) {
      // No sink yet, or a read after a stop (Node's stream machinery restarts reading once when pause() follows resume()
      // in the same tick): kept, and handed on at resume.
      this.pending.push(Buffer.from(bytes));
      return false;
    }
    this.deliver(bytes.buffer === this.parking.buffer ? Buffer.from(bytes) : bytes);
    return !this.paused;
  }

  private deliver(bytes: Buffer): void {
    if (bytes.length > this.length - this.received) return this.fail(new Error(`the store sent more than the body's Content-Length (${this.length} bytes)`));
    this.received += bytes.length;
    const more = this.sink!.arrived(bytes);
    if (this.received === this.length) return this.finish();
    if (!more) this.paused = true;
  }

  private finish(): void {
    this.outcome = {};
    this.paused = true;
    // Closed before the sink hears of the end: no read can land in a room the sink hands on after it.
    this.socket.destroy();
    this.signal.removeEventListener("abort", this.abort);
    this.sink?.ended();
  }

  private fail(error: Error): void {
    if (this.outcome) return;
    this.outcome = { error };
    this.paused = true;
    this.pending.length = 0;
    this.socket.destroy();
    this.signal.removeEventListener("abort", this.abort);
    this.sink?.ended(error);
  }
}

/**
 * The body of a store's answer as a StoreBody, when its connection can be taken over: plain HTTP
 * (not TLS), framed by `Content-Length` (no Transfer-Encoding), not yet read (by anyone, nor whole
 * by the HTTP client), the socket holding no unparsed bytes. Else undefined: the answer is read as
 * an IncomingMessage, as every other answer is. The HTTP client's socket is destroyed without its
 * handle (Node's client and agent see it close; the connection lives on in the StoreBody).
 */
export function takeOverBody(response: IncomingMessage, signal: AbortSignal, idleMs = storeIdleMs): StoreBody | undefined {
  const socket = response.socket as (Socket & { encrypted?: boolean }) | null;
  const length = Number(response.headers["content-length"]);
  const framed = response.headers["transfer-encoding"] === undefined && response.headers["content-length"] !== undefined && Number.isSafeInteger(length);
  if (!socket || socket.encrypted || socket.destroyed || !framed || response.complete || response.readableFlowing !== null || socket.readableLength > 0)
    return undefined;
  // From here on, in this tick: no read can reach the old socket (it would drop it) before the new one owns the handle.
  const handle = takeHandle(socket);
  if (!handle) return undefined;
  const first: Buffer[] = [];
  for (let chunk: Buffer | null = response.read(); chunk !== null; chunk = response.read()) first.push(chunk);
  const body = new StoreBody(handle, first, length, signal, idleMs);
  socket.destroy();
  return body;
}
