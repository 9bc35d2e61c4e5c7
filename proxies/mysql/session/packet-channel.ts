import type { Socket } from "node:net";
import { encodePacket, nextSequenceId, PacketReader, type Packet } from "../../../protocols/mysql/packets";

/** Buffered bytes past which the socket stops being read until the session takes packets (backpressure). */
const pauseAbove = 1024 * 1024;

/** The peer closed, or the channel was closed: whoever waits for a packet gets this. */
export class ChannelClosed extends Error {}

/**
 * One side of a MySQL connection as packets: reads put back together (PacketReader), sends
 * framed with the side's own sequence ids. Each side numbers its packets itself: the proxy drops
 * rows and answers refusals, so ids are never copied from the other side. Reading is pulled
 * (`next`): packets are taken from the received bytes only when asked for (so the bytes after an
 * SSLRequest, a TLS ClientHello, stay bytes), and the socket is paused while too many wait.
 */
export class PacketChannel {
  /** The sequence id of the next packet sent (each received packet sets it to the one after its last). */
  sequence = 0;
  private readonly reader: PacketReader;
  /** Packets taken from the reader by a look-ahead (`queued`), not yet by `next`: those from `head` on. */
  private queue: Packet[] = [];
  private head = 0;
  private waiting?: { resolve: (packet: Packet) => void; reject: (error: Error) => void };
  private closed?: Error;
  private paused = false;
  private pendingWrites: Buffer[] = [];
  /** Bytes pushed and not flushed yet. */
  pendingBytes = 0;
  private readonly onData = (chunk: Buffer) => this.received(chunk);

  constructor(
    public socket: Socket,
    maxPayload: number,
  ) {
    this.reader = new PacketReader(maxPayload);
    this.listen(socket);
  }

  /** The largest payload taken from now on (a longer one closes the channel). */
  set maxPayload(bytes: number) {
    this.reader.maxPayloadLength = bytes;
  }

  private listen(socket: Socket): void {
    socket.on("data", this.onData);
    socket.once("close", () => this.fail(new ChannelClosed("connection closed")));
  }

  /** TLS starts on this side: the bytes received after the last packet taken (the client's first TLS bytes) go to TLS, whose socket `secure` makes of them. */
  upgrade(secure: (leftover: Buffer) => Socket): void {
    this.socket.off("data", this.onData);
    const leftover = this.reader.drain();
    this.queue = [];
    this.head = 0;
    this.socket = secure(leftover);
    this.listen(this.socket);
  }

  private received(chunk: Buffer): void {
    this.reader.push(chunk);
    if (this.waiting) {
      const packet = this.take();
      if (packet) {
        const { resolve } = this.waiting;
        this.waiting = undefined;
        resolve(packet);
      }
    }
    if (!this.paused && !this.waiting && this.reader.buffered > pauseAbove) {
      this.paused = true;
      this.socket.pause();
    }
  }

  /** The next packet from the look-ahead queue or the reader; a malformed stream closes the channel. */
  private take(): Packet | undefined {
    let packet: Packet | undefined;
    try {
      if (this.head < this.queue.length) {
        packet = this.queue[this.head++];
        if (this.head === this.queue.length) {
          this.queue = [];
          this.head = 0;
        }
      } else packet = this.reader.next();
    } catch (error) {
      this.fail(error as Error);
      this.socket.destroy();
      return undefined;
    }
    if (!packet) return undefined;
    this.sequence = (packet.lastSequenceId + 1) & 0xff;
    if (this.paused && this.reader.buffered < pauseAbove / 4) {
      this.paused = false;
      this.socket.resume();
    }
    return packet;
  }

  /** The next packet if one is here already (no promise per packet on the hot path). */
  tryNext(): Packet | undefined {
    if (this.closed && !this.hasReceived()) return undefined;
    return this.take();
  }

  /** Whether bytes or packets received are waiting to be taken. */
  hasReceived(): boolean {
    return this.head < this.queue.length || this.reader.buffered > 0;
  }

  /** Packets received and not taken yet, looked at (never taken) by the row look-ahead. */
  queued(): readonly Packet[] {
    try {
      for (let packet = this.reader.next(); packet; packet = this.reader.next()) this.queue.push(packet);
    } catch {
      // Left for `take` to report when the session reaches it.
    }
    return this.queue.slice(this.head);
  }

  /** The next packet; rejects with ChannelClosed when the peer closes first. */
  next(): Promise<Packet> {
    const ready = this.take();
    if (ready) return Promise.resolve(ready);
    if (this.closed) return Promise.reject(this.closed);
    if (this.waiting) return Promise.reject(new Error("two readers of one channel"));
    // A packet larger than the pause threshold needs the rest of its bytes.
    if (this.paused) {
      this.paused = false;
      this.socket.resume();
    }
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  private fail(error: Error): void {
    this.closed ??= error;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.reject(this.closed);
  }

  /** Frames `payload` with the next sequence ids; held until `flush` (one write per batch of packets). */
  push(payload: Buffer): void {
    const packet = encodePacket(payload, this.sequence);
    this.pendingWrites.push(packet);
    this.pendingBytes += packet.length;
    this.sequence = nextSequenceId(this.sequence, payload.length);
  }

  /** Writes what was pushed; resolves at once, or when the socket drained if its buffer is full (backpressure). */
  flush(): Promise<void> | undefined {
    if (this.pendingWrites.length === 0) return undefined;
    const bytes = this.pendingWrites.length === 1 ? this.pendingWrites[0]! : Buffer.concat(this.pendingWrites);
    this.pendingWrites = [];
    this.pendingBytes = 0;
    if (this.socket.destroyed) return undefined;
    if (this.socket.write(bytes)) return undefined;
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off("drain", done);
        this.socket.off("close", done);
        resolve();
      };
      this.socket.on("drain", done);
      this.socket.on("close", done);
    });
  }

  /** Sends one packet now. */
  send(payload: Buffer): Promise<void> | undefined {
    this.push(payload);
    return this.flush();
  }

  close(): void {
    this.fail(new ChannelClosed("connection closed"));
    this.socket.destroy();
  }
}
