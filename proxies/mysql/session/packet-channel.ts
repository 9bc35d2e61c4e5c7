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
 * (`next`), so a session handles one packet at a time and the socket is paused while packets wait.
 */
export class PacketChannel {
  /** The sequence id of the next packet sent (each received packet sets it to the one after its last). */
  sequence = 0;
  private reader: PacketReader;
  private queue: Packet[] = [];
  private waiting?: { resolve: (packet: Packet) => void; reject: (error: Error) => void };
  private closed?: Error;
  private paused = false;
  private pendingWrites: Buffer[] = [];

  constructor(
    public socket: Socket,
    maxPayload: number,
  ) {
    this.reader = new PacketReader(maxPayload);
    this.listen(socket);
  }

  private readonly onData = (chunk: Buffer) => this.received(chunk);

  private listen(socket: Socket): void {
    socket.on("data", this.onData);
    socket.once("close", () => this.fail(new ChannelClosed("connection closed")));
  }

  /** TLS started on this side: packets now come from the TLS socket (the plain socket's bytes are TLS records). */
  upgrade(socket: Socket): void {
    this.socket.off("data", this.onData);
    this.socket = socket;
    this.listen(socket);
  }

  /** Bytes received and not yet taken as packets (a client must send nothing during the TLS handshake). */
  get buffered(): number {
    return this.reader.buffered + this.queue.length;
  }

  private received(chunk: Buffer): void {
    this.reader.push(chunk);
    try {
      for (let packet = this.reader.next(); packet; packet = this.reader.next()) {
        if (this.waiting) {
          const { resolve } = this.waiting;
          this.waiting = undefined;
          this.taken(packet);
          resolve(packet);
        } else this.queue.push(packet);
      }
    } catch (error) {
      this.fail(error as Error);
      this.socket.destroy();
      return;
    }
    if (!this.paused && this.reader.buffered + this.queue.length * 64 > pauseAbove) {
      this.paused = true;
      this.socket.pause();
    }
  }

  private taken(packet: Packet): void {
    this.sequence = (packet.lastSequenceId + 1) & 0xff;
    if (this.paused && this.queue.length < 64 && this.reader.buffered < pauseAbove / 4) {
      this.paused = false;
      this.socket.resume();
    }
  }

  /** The next packet if one is here already (no promise per packet on the hot path). */
  tryNext(): Packet | undefined {
    if (this.queue.length === 0) return undefined;
    const packet = this.queue.shift()!;
    this.taken(packet);
    return packet;
  }

  /** Packets received and not taken yet (looked at, never taken, by the row look-ahead). */
  queued(): readonly Packet[] {
    return this.queue;
  }

  /** The next packet; rejects with ChannelClosed when the peer closes first. */
  next(): Promise<Packet> {
    const ready = this.tryNext();
    if (ready) return Promise.resolve(ready);
    if (this.closed) return Promise.reject(this.closed);
    if (this.waiting) return Promise.reject(new Error("two readers of one channel"));
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
    this.pendingWrites.push(encodePacket(payload, this.sequence));
    this.sequence = nextSequenceId(this.sequence, payload.length);
  }

  /** Writes what was pushed; resolves at once, or when the socket drained if its buffer is full (backpressure). */
  flush(): Promise<void> | undefined {
    if (this.pendingWrites.length === 0) return undefined;
    const bytes = this.pendingWrites.length === 1 ? this.pendingWrites[0]! : Buffer.concat(this.pendingWrites);
    this.pendingWrites = [];
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
