import { connect, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { BackendCode } from "../../protocols/postgres/codes";
import { decodeBackendKeyData, type BackendKeyData } from "../../protocols/postgres/backend-key-data";
import { decodeDataRow, newRowValues } from "../../protocols/postgres/data-row";
import { decodeErrorFields, ErrorField } from "../../protocols/postgres/error-response";
import { splitFrames } from "../../protocols/postgres/frames";
import { encodePasswordMessage } from "../../protocols/postgres/password";
import { encodeSSLRequest, encodeStartup } from "../../protocols/postgres/startup";

/** One message from the server, decoded just enough for tests. */
export interface WireMessage {
  code: string;
  body: Buffer;
}

/**
 * A bare protocol client for what drivers do not do on demand: pipelining without Describe,
 * Execute with a row limit, cancel keys, malformed frames. Authenticates with trust, or a cleartext
 * password over TLS (an export that verifies passwords itself).
 */
export class WireClient {
  private buffer = Buffer.alloc(0);
  readonly messages: WireMessage[] = [];
  private waiters: Array<() => void> = [];
  closed = false;
  keys?: BackendKeyData;
  /** What the server sent from the startup packet to the first ReadyForQuery (ParameterStatus among it). */
  startup: WireMessage[] = [];

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      const { frames, consumed } = splitFrames(this.buffer, 1 << 30);
      for (const f of frames) this.messages.push({ code: String.fromCharCode(f.code), body: Buffer.from(this.buffer.subarray(f.bodyStart, f.end)) });
      this.buffer = this.buffer.subarray(consumed);
      this.wake();
    });
    socket.on("close", () => {
      this.closed = true;
      this.wake();
    });
    socket.on("error", () => undefined);
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  static connect(port: number, user: string, database: string): Promise<WireClient> {
    return WireClient.connectWith(
      port,
      new Map([
        ["user", user],
        ["database", database],
      ]),
    );
  }

  static async connectWith(port: number, parameters: Map<string, string>): Promise<WireClient> {
    const socket = connect({ host: "127.0.0.1", port });
    await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    return WireClient.login(new WireClient(socket), parameters);
  }

  /** SSLRequest, TLS (any certificate), then the startup; answers a cleartext password request with `password`. */
  static async connectTls(port: number, parameters: Map<string, string>, password: string): Promise<WireClient> {
    const plain = connect({ host: "127.0.0.1", port });
    await new Promise((resolve, reject) => plain.once("connect", resolve).once("error", reject));
    plain.write(encodeSSLRequest());
    const answer = await new Promise<Buffer>((resolve, reject) => plain.once("data", resolve).once("error", reject));
    if (answer.toString("latin1") !== "S") throw new Error(`the server declined TLS: ${answer.toString("latin1")}`);
    const socket = connectTls({ socket: plain, rejectUnauthorized: false });
    await new Promise((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
    return WireClient.login(new WireClient(socket), parameters, password);
  }

  private static async login(client: WireClient, parameters: Map<string, string>, password?: string): Promise<WireClient> {
    client.socket.write(encodeStartup(parameters));
    const cleartextRequest = (m: WireMessage) => m.code === "R" && m.body.readInt32BE(0) === 3;
    let startup = await client.until((m) => m.code === "Z" || m.code === "E" || cleartextRequest(m));
    if (startup.some(cleartextRequest)) {
      if (password === undefined) {
        client.close();
        throw new Error("the server asks for a password");
      }
      client.send(encodePasswordMessage(password));
      startup = [...startup, ...(await client.until((m) => m.code === "Z" || m.code === "E"))];
    }
    client.startup = startup;
    const keys = startup.find((m) => m.code === "K");
    if (keys) client.keys = decodeBackendKeyData(keys.body);
    const error = startup.find((m) => m.code === "E");
    if (error) client.close();
    if (error) throw new Error(`startup failed: ${decodeErrorFields(error.body).get(ErrorField.Message)}`);
    return client;
  }

  send(...messages: Buffer[]): void {
    this.socket.write(Buffer.concat(messages));
  }

  /** Messages received from now until (and including) the `count`-th one matching `done`; consumed from the queue. */
  async until(done: (m: WireMessage) => boolean, count = 1, timeoutMs = 15_000): Promise<WireMessage[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let seen = 0;
      const index = this.messages.findIndex((m) => done(m) && ++seen === count);
      if (index !== -1) return this.messages.splice(0, index + 1);
      if (this.closed) return this.messages.splice(0);
      if (Date.now() > deadline) throw new Error(`timed out waiting; got ${this.messages.map((m) => m.code).join("")}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

/** The text values of the DataRows among `messages` (null for NULL). */
export function rowsOf(messages: readonly WireMessage[]): Array<Array<string | null>> {
  return messages
    .filter((m) => m.code === String.fromCharCode(BackendCode.DataRow))
    .map((m) => {
      const row = decodeDataRow(m.body, 0, m.body.length, newRowValues());
      return Array.from({ length: row.count }, (_, i) =>
        row.lengths[i]! < 0 ? null : m.body.toString("utf8", row.starts[i]!, row.starts[i]! + row.lengths[i]!),
      );
    });
}

/** The SQLSTATE and message of each ErrorResponse among `messages`. */
export function errorsOf(messages: readonly WireMessage[]): Array<{ code: string; message: string }> {
  return messages
    .filter((m) => m.code === "E")
    .map((m) => {
      const fields = decodeErrorFields(m.body);
      return { code: fields.get(ErrorField.Code) ?? "", message: fields.get(ErrorField.Message) ?? "" };
    });
}
