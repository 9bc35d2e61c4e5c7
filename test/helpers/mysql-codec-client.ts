import { connect, type Socket } from "node:net";
import type { Handshake } from "../../protocols/mysql/handshake";
import { encodeHandshakeResponse } from "../../protocols/mysql/handshake-response";
import { nativePasswordPlugin, nativePasswordResponse } from "../../protocols/mysql/native-password";
import { encodePacket, nextSequenceId, PacketReader, type Packet } from "../../protocols/mysql/packets";

/** The HandshakeResponse41 of a mysql_native_password login to `handshake`'s scramble, in utf8mb4, into database `app`. */
export function nativePasswordLogin(handshake: Handshake, capabilities: number, account: { user: string; password: string }): Buffer {
  return encodeHandshakeResponse({
    capabilities,
    maxPacketSize: 1 << 24,
    characterSet: 45,
    mariaDbCapabilities: 0,
    username: account.user,
    authResponse: nativePasswordResponse(account.password, handshake.authPluginData),
    database: "app",
    authPluginName: nativePasswordPlugin,
  });
}

/**
 * The smallest client a test needs to drive a real server with protocols/mysql/ alone: it
 * frames what the test encodes, and hands back whole packets as the codec's reader assembles
 * them. What to send and how to read the answer is the test's (and so the codec's) business.
 */
export class CodecClient {
  private readonly reader = new PacketReader();
  private readonly waiting: Array<(packet: Packet) => void> = [];
  private readonly ready: Packet[] = [];
  private failure: Error | undefined;
  /** The sequence id the next packet this client sends takes (a command resets it to 0). */
  private sequenceId = 0;

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk) => {
      this.reader.push(chunk);
      try {
        for (let packet = this.reader.next(); packet; packet = this.reader.next()) {
          this.sequenceId = (packet.lastSequenceId + 1) & 0xff;
          const waiter = this.waiting.shift();
          if (waiter) waiter(packet);
          else this.ready.push(packet);
        }
      } catch (error) {
        this.failure = error as Error;
        socket.destroy();
      }
    });
    socket.on("close", () => {
      this.failure ??= new Error("the server closed the connection");
      for (const waiter of this.waiting.splice(0)) waiter(undefined as unknown as Packet);
    });
  }

  static connect(port: number): Promise<CodecClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port }, () => resolve(new CodecClient(socket)));
      socket.once("error", reject);
    });
  }

  /** The next whole packet's payload from the server. */
  async read(): Promise<Buffer> {
    const packet = this.ready.shift() ?? (await new Promise<Packet>((resolve) => this.waiting.push(resolve)));
    if (!packet) throw this.failure ?? new Error("no packet");
    return packet.payload;
  }

  /** Sends a payload continuing the current exchange (after the server's last packet). */
  send(payload: Buffer): void {
    this.socket.write(encodePacket(payload, this.sequenceId));
    this.sequenceId = nextSequenceId(this.sequenceId, payload.length);
  }

  /** Sends a command: a new exchange, sequence id 0. */
  command(payload: Buffer): void {
    this.sequenceId = 0;
    this.send(payload);
  }

  close(): void {
    this.socket.destroy();
  }
}
