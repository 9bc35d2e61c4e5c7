import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { encodeAuthMoreData } from "../../protocols/mysql/auth-more-data";
import { encodeAuthSwitchRequest } from "../../protocols/mysql/auth-switch";
import { encodeBinaryRow, maskBinaryRow } from "../../protocols/mysql/binary-row";
import {
  CachingSha2,
  cachingSha2Hash,
  cachingSha2PasswordPlugin,
  passwordFromRsaEncrypted,
  verifyCachingSha2,
} from "../../protocols/mysql/caching-sha2-password";
import { Capability, hasCapability, MariaDbCapability } from "../../protocols/mysql/capabilities";
import { decodeChangeUser, type ChangeUser } from "../../protocols/mysql/change-user";
import { encodeColumnCount } from "../../protocols/mysql/column-count";
import { encodeColumnDefinition, type ColumnDefinition } from "../../protocols/mysql/column-definition";
import { ColumnType } from "../../protocols/mysql/column-types";
import { Command } from "../../protocols/mysql/commands";
import { encodeEofPacket } from "../../protocols/mysql/eof-packet";
import { encodeErrPacket, type ErrPacket } from "../../protocols/mysql/err-packet";
import { encodeHandshake } from "../../protocols/mysql/handshake";
import { decodeHandshakeResponse, type HandshakeResponse } from "../../protocols/mysql/handshake-response";
import { encodeLocalInfileRequest } from "../../protocols/mysql/local-infile";
import { nativePasswordHash, nativePasswordPlugin, verifyNativePassword } from "../../protocols/mysql/native-password";
import { encodeOkPacket, OkHeader, type OkPacket } from "../../protocols/mysql/ok-packet";
import { encodePacket, nextSequenceId, PacketReader } from "../../protocols/mysql/packets";
import { decodeQuery, type Query } from "../../protocols/mysql/query";
import { ServerStatus } from "../../protocols/mysql/status-flags";
import { decodeStmtExecute, type StmtExecute } from "../../protocols/mysql/stmt-execute";
import { encodeStmtPrepareOk } from "../../protocols/mysql/stmt-prepare-ok";
import { decodeTextCommand } from "../../protocols/mysql/text-commands";
import { encodeTextRow, maskTextRow } from "../../protocols/mysql/text-row";
import type { ValueActions } from "../../protocols/mysql/row-values";

/**
 * A tiny MySQL server built on protocols/mysql/, for checking the codec against a real client
 * (mysql2) over a loopback socket: it answers the handshake, authenticates with
 * mysql_native_password or caching_sha2_password (fast auth, or full auth with the RSA key
 * exchange), and serves the resultsets a test scripts, as text rows to COM_QUERY and binary
 * rows to prepared statements, masked as the test says. It records every decoded command so
 * the test can compare what mysql2 sent with what it meant.
 */

/** One row of a scripted resultset: its values as text (COM_QUERY) and as binary content (COM_STMT_EXECUTE). */
export interface ScriptedRow {
  text: Array<Buffer | null>;
  binary: Array<Buffer | null>;
}

export type ScriptedAnswer =
  | { kind: "resultset"; columns: ColumnDefinition[]; rows: ScriptedRow[]; mask?: ValueActions }
  | { kind: "ok"; ok: Partial<OkPacket> }
  | { kind: "err"; err: ErrPacket }
  | { kind: "local-infile"; fileName: string };

export interface CodecServerOptions {
  authPlugin: typeof nativePasswordPlugin | typeof cachingSha2PasswordPlugin;
  users: Record<string, { password: string; plugin?: string }>;
  capabilities: number;
  mariaDbCapabilities?: number;
  serverVersion?: string;
  /** caching_sha2: whether the server has the password's hash cached (fast auth) or must do full auth. */
  sha2Cached?: boolean;
  /** Answers to COM_QUERY and, for their columns, to COM_STMT_PREPARE; several for a multi-statement query. */
  answer(sql: string): ScriptedAnswer[];
}

export interface Recorded {
  handshakeResponses: HandshakeResponse[];
  queries: Query[];
  prepares: string[];
  executes: StmtExecute[];
  changeUsers: ChangeUser[];
  commands: number[];
  infileData: Buffer[];
  authOutcomes: string[];
}

interface Connection {
  socket: Socket;
  reader: PacketReader;
  scramble: Buffer;
  capabilities: number;
  mariaDbCapabilities: number;
  state: "handshake" | "auth-more" | "auth-switch" | "rsa" | "command" | "infile";
  username: string;
  pluginInUse: string;
  statements: Map<number, { sql: string; parameterCount: number; columns: ColumnDefinition[] }>;
  infile: Buffer[];
}

const { publicKey: rsaPublicKey, privateKey: rsaPrivateKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  publicKeyEncoding: { type: "spki", format: "pem" },
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
});

/** 20 random bytes that are never NUL (servers' scrambles avoid it: clients may treat it as the end). */
function printableScramble(): Buffer {
  return Buffer.from(randomBytes(20).map((b) => (b % 94) + 33));
}

export class CodecServer {
  readonly recorded: Recorded = {
    handshakeResponses: [],
    queries: [],
    prepares: [],
    executes: [],
    changeUsers: [],
    commands: [],
    infileData: [],
    authOutcomes: [],
  };
  private readonly sockets = new Set<Socket>();
  private nextStatementId = 1;

  private constructor(
    private readonly server: Server,
    private readonly options: CodecServerOptions,
  ) {}

  static async start(options: CodecServerOptions): Promise<CodecServer> {
    let instance: CodecServer | undefined;
    const server = createServer((socket) => instance!.accept(socket));
    instance = new CodecServer(server, options);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return instance;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    const connection: Connection = {
      socket,
      reader: new PacketReader(),
      scramble: printableScramble(),
      capabilities: 0,
      mariaDbCapabilities: 0,
      state: "handshake",
      username: "",
      pluginInUse: this.options.authPlugin,
      statements: new Map(),
      infile: [],
    };
    this.send(connection, 0, [
      encodeHandshake({
        protocolVersion: 10,
        serverVersion: this.options.serverVersion ?? "8.0.36-codec-server",
        connectionId: 1,
        authPluginData: connection.scramble,
        capabilities: this.options.capabilities,
        mariaDbCapabilities: this.options.mariaDbCapabilities ?? 0,
        characterSet: 45,
        statusFlags: ServerStatus.Autocommit,
        authPluginName: this.options.authPlugin,
      }),
    ]);
    socket.on("data", (chunk) => {
      connection.reader.push(chunk);
      try {
        for (let packet = connection.reader.next(); packet; packet = connection.reader.next()) this.receive(connection, packet.lastSequenceId, packet.payload);
      } catch (error) {
        // A codec error here is a test failure: say it loudly and drop the connection.
        process.stderr.write(`codec server: ${String(error)}\n`);
        socket.destroy();
      }
    });
    socket.on("error", () => socket.destroy());
  }

  /** Frames payloads as consecutive packets from `sequenceId`. */
  private send(connection: Connection, sequenceId: number, payloads: Buffer[]): void {
    let id = sequenceId;
    const framed = payloads.map((payload) => {
      const packet = encodePacket(payload, id);
      id = nextSequenceId(id, payload.length);
      return packet;
    });
    connection.socket.write(Buffer.concat(framed));
  }

  private ok(connection: Connection, partial: Partial<OkPacket> = {}): Buffer {
    return encodeOkPacket(
      { header: OkHeader.Ok, affectedRows: 0, lastInsertId: 0, statusFlags: ServerStatus.Autocommit, warnings: 0, info: "", ...partial },
      connection.capabilities,
    );
  }

  private denied(connection: Connection, sequenceId: number): void {
    this.recorded.authOutcomes.push(`denied ${connection.username}`);
    this.send(connection, sequenceId, [
      encodeErrPacket({ code: 1045, sqlState: "28000", message: `Access denied for user '${connection.username}'@'localhost' (using password: YES)` }),
    ]);
  }

  private accepted(connection: Connection, sequenceId: number, how: string, payloads: Buffer[] = []): void {
    this.recorded.authOutcomes.push(`${how} ${connection.username}`);
    connection.state = "command";
    this.send(connection, sequenceId, [...payloads, this.ok(connection)]);
  }

  private receive(connection: Connection, lastSequenceId: number, payload: Buffer): void {
    const reply = (lastSequenceId + 1) & 0xff;
    switch (connection.state) {
      case "handshake": {
        const response = decodeHandshakeResponse(payload);
        this.recorded.handshakeResponses.push(response);
        connection.capabilities = (response.capabilities & this.options.capabilities) >>> 0;
        // MariaDB's own capabilities count only when both leave CLIENT_MYSQL clear (decodeHandshakeResponse reads 0 otherwise).
        connection.mariaDbCapabilities = hasCapability(this.options.capabilities, Capability.LongPassword)
          ? 0
          : response.mariaDbCapabilities & (this.options.mariaDbCapabilities ?? 0);
        connection.username = response.username;
        this.authenticate(connection, reply, response.authPluginName ?? nativePasswordPlugin, response.authResponse);
        return;
      }
      case "auth-switch":
        this.authenticate(connection, reply, connection.pluginInUse, payload);
        return;
      case "auth-more": {
        // caching_sha2 full auth on a plain socket: the client asks for the public key.
        if (payload.length === 1 && payload[0] === CachingSha2.RequestPublicKey) {
          connection.state = "rsa";
          this.send(connection, reply, [encodeAuthMoreData(Buffer.from(rsaPublicKey))]);
        } else this.denied(connection, reply);
        return;
      }
      case "rsa": {
        const password = passwordFromRsaEncrypted(payload, connection.scramble, rsaPrivateKey).toString();
        if (password === this.options.users[connection.username]?.password) this.accepted(connection, reply, "full-auth");
        else this.denied(connection, reply);
        return;
      }
      case "infile": {
        // The file's contents, then an empty packet.
        if (payload.length > 0) connection.infile.push(payload);
        else {
          this.recorded.infileData.push(Buffer.concat(connection.infile));
          connection.state = "command";
          this.send(connection, reply, [this.ok(connection, { affectedRows: 1 })]);
        }
        return;
      }
      case "command":
        this.command(connection, reply, payload);
    }
  }

  private authenticate(connection: Connection, reply: number, clientPlugin: string, authResponse: Buffer): void {
    const user = this.options.users[connection.username];
    if (!user) return this.denied(connection, reply);
    const wanted = user.plugin ?? this.options.authPlugin;
    if (clientPlugin !== wanted) {
      // The account uses another plugin: switch to it with a fresh scramble (and the NUL servers append).
      connection.scramble = printableScramble();
      connection.pluginInUse = wanted;
      connection.state = "auth-switch";
      this.send(connection, reply, [encodeAuthSwitchRequest({ pluginName: wanted, pluginData: Buffer.concat([connection.scramble, Buffer.alloc(1)]) })]);
      return;
    }
    if (wanted === nativePasswordPlugin) {
      if (verifyNativePassword(authResponse, connection.scramble, nativePasswordHash(user.password))) this.accepted(connection, reply, "native");
      else this.denied(connection, reply);
      return;
    }
    if (this.options.sha2Cached) {
      if (verifyCachingSha2(authResponse, connection.scramble, cachingSha2Hash(user.password)))
        this.accepted(connection, reply, "fast-auth", [encodeAuthMoreData(Buffer.from([CachingSha2.FastAuthSuccess]))]);
      else this.denied(connection, reply);
      return;
    }
    connection.state = "auth-more";
    this.send(connection, reply, [encodeAuthMoreData(Buffer.from([CachingSha2.PerformFullAuthentication]))]);
  }

  private command(connection: Connection, reply: number, payload: Buffer): void {
    const code = payload[0]!;
    this.recorded.commands.push(code);
    switch (code) {
      case Command.Quit:
        connection.socket.end();
        return;
      case Command.Ping:
        return this.send(connection, reply, [this.ok(connection)]);
      case Command.Query: {
        const query = decodeQuery(payload, connection.capabilities);
        this.recorded.queries.push(query);
        const answers = this.options.answer(query.sql);
        const out: Buffer[] = [];
        answers.forEach((answer, i) => {
          const more = i < answers.length - 1 ? ServerStatus.MoreResultsExist : 0;
          if (answer.kind === "local-infile") {
            connection.state = "infile";
            connection.infile = [];
            out.push(encodeLocalInfileRequest(answer.fileName));
          } else if (answer.kind === "err") out.push(encodeErrPacket(answer.err));
          else if (answer.kind === "ok")
            out.push(this.ok(connection, { ...answer.ok, statusFlags: (answer.ok.statusFlags ?? ServerStatus.Autocommit) | more }));
          else out.push(...this.resultset(connection, answer, "text", more));
        });
        return this.send(connection, reply, out);
      }
      case Command.StmtPrepare: {
        const sql = decodeTextCommand(payload, Command.StmtPrepare);
        this.recorded.prepares.push(sql);
        const answer = this.options.answer(sql)[0];
        const columns = answer?.kind === "resultset" ? answer.columns : [];
        // Test-only: the scripted statements mark their parameters with '?' and hold no '?' otherwise.
        const parameterCount = sql.split("?").length - 1;
        const statementId = this.nextStatementId++;
        connection.statements.set(statementId, { sql, parameterCount, columns });
        const parameter: ColumnDefinition = {
          catalog: "def",
          schema: "",
          table: "",
          orgTable: "",
          name: "?",
          orgName: "",
          characterSet: 63,
          columnLength: 0,
          type: ColumnType.VarString,
          flags: 0,
          decimals: 0,
        };
        const out = [
          encodeStmtPrepareOk({ statementId, columnCount: columns.length, parameterCount, warnings: 0, metadataFollows: true }, connection.capabilities),
        ];
        if (parameterCount > 0) out.push(...Array.from({ length: parameterCount }, () => encodeColumnDefinition(parameter)), ...this.eof(connection, 0));
        if (columns.length > 0) out.push(...columns.map((c) => encodeColumnDefinition(c, this.definitionOptions(connection))), ...this.eof(connection, 0));
        return this.send(connection, reply, out);
      }
      case Command.StmtExecute: {
        const statementId = payload.readUInt32LE(1);
        const statement = connection.statements.get(statementId);
        if (!statement)
          return this.send(connection, reply, [encodeErrPacket({ code: 1243, sqlState: "HY000", message: "Unknown prepared statement handler" })]);
        const execute = decodeStmtExecute(payload, { parameterCount: statement.parameterCount, capabilities: connection.capabilities });
        this.recorded.executes.push(execute);
        const answer = this.options.answer(statement.sql)[0];
        if (answer?.kind !== "resultset") return this.send(connection, reply, [this.ok(connection)]);
        return this.send(connection, reply, this.resultset(connection, answer, "binary", 0));
      }
      case Command.StmtClose:
        connection.statements.delete(payload.readUInt32LE(1));
        return;
      case Command.ChangeUser: {
        const change = decodeChangeUser(payload, connection.capabilities);
        this.recorded.changeUsers.push(change);
        connection.username = change.username;
        return this.authenticate(connection, reply, change.authPluginName ?? nativePasswordPlugin, change.authResponse);
      }
      default:
        return this.send(connection, reply, [encodeErrPacket({ code: 1047, sqlState: "08S01", message: "Unknown command" })]);
    }
  }

  private definitionOptions(connection: Connection): { mariaDbExtendedMetadata: boolean } {
    return { mariaDbExtendedMetadata: (connection.mariaDbCapabilities & MariaDbCapability.ExtendedMetadata) !== 0 };
  }

  private eof(connection: Connection, statusFlags: number): Buffer[] {
    return hasCapability(connection.capabilities, Capability.DeprecateEof)
      ? []
      : [encodeEofPacket({ warnings: 0, statusFlags: statusFlags | ServerStatus.Autocommit }, connection.capabilities)];
  }

  private resultset(connection: Connection, answer: Extract<ScriptedAnswer, { kind: "resultset" }>, form: "text" | "binary", more: number): Buffer[] {
    const types = answer.columns.map((c) => c.type);
    const out = [encodeColumnCount({ columnCount: answer.columns.length, metadataFollows: true }, connection.capabilities)];
    out.push(...answer.columns.map((c) => encodeColumnDefinition(c, this.definitionOptions(connection))), ...this.eof(connection, 0));
    for (const row of answer.rows) {
      if (form === "text") {
        const encoded = encodeTextRow(row.text);
        out.push(answer.mask ? maskTextRow(encoded, types.length, answer.mask) : encoded);
      } else {
        const encoded = encodeBinaryRow(types, row.binary);
        out.push(answer.mask ? maskBinaryRow(encoded, types, answer.mask) : encoded);
      }
    }
    const status = ServerStatus.Autocommit | more;
    if (hasCapability(connection.capabilities, Capability.DeprecateEof))
      out.push(
        encodeOkPacket(
          { header: OkHeader.EndOfResultset, affectedRows: 0, lastInsertId: 0, statusFlags: status, warnings: 0, info: "" },
          connection.capabilities,
        ),
      );
    else out.push(encodeEofPacket({ warnings: 0, statusFlags: status }, connection.capabilities));
    return out;
  }
}
