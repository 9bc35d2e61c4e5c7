import { connect as connectTls, TLSSocket } from "node:tls";
import { connectionNotAuditedMessage } from "../../../exports/door";
import { backendTlsOptions, verifiesCertificate } from "../../../exports/backend-tls";
import { decodeAuthMoreData } from "../../../protocols/mysql/auth-more-data";
import { decodeAuthSwitchRequest, encodeAuthSwitchRequest, scrambleOf } from "../../../protocols/mysql/auth-switch";
import {
  CachingSha2,
  cachingSha2PasswordPlugin,
  cachingSha2Response,
  passwordFromCleartext,
  rsaEncryptedPassword,
  sha256PasswordRequestPublicKey,
} from "../../../protocols/mysql/caching-sha2-password";
import { Capability, hasCapability } from "../../../protocols/mysql/capabilities";
import { clientEd25519Plugin, ed25519Response } from "../../../protocols/mysql/client-ed25519";
import { Command } from "../../../protocols/mysql/commands";
import { encodeErrPacket, isErrPacket } from "../../../protocols/mysql/err-packet";
import { decodeHandshake, encodeHandshake, type Handshake } from "../../../protocols/mysql/handshake";
import { decodeHandshakeResponse, encodeHandshakeResponse, type HandshakeResponse } from "../../../protocols/mysql/handshake-response";
import { nativePasswordPlugin, nativePasswordResponse } from "../../../protocols/mysql/native-password";
import { decodeOkPacket, encodeOkPacket, isOkPacket } from "../../../protocols/mysql/ok-packet";
import { encodeSslRequest, isSslRequest } from "../../../protocols/mysql/ssl-request";
import { ServerStatus } from "../../../protocols/mysql/status-flags";
import type { PacketChannel } from "./packet-channel";
import { carrying } from "./tls-carrier";
import type { MysqlSessionDeps } from "./session-deps";

/**
 * Capabilities the proxy lets through, both ways. Left out: LOCAL INFILE (the server could ask
 * the client for any file), compression, multi-statements and multi-results (the proxy offers
 * those to clients itself, proxyCapabilities, and runs each statement alone), session-state tracking (it reports variable values), optional metadata
 * and query attributes (every result carries the definitions the proxy checks), IGNORE_SPACE
 * (it changes how the server reads names the parser reads), and every MariaDB extension (progress
 * reports, bulk, extended and cached metadata).
 */
const passedCapabilities =
  Capability.LongPassword |
  Capability.FoundRows |
  Capability.LongFlag |
  Capability.ConnectWithDb |
  Capability.Odbc |
  Capability.Protocol41 |
  Capability.Interactive |
  Capability.Transactions |
  Capability.Reserved |
  Capability.SecureConnection |
  Capability.PluginAuth |
  Capability.ConnectAttrs |
  Capability.PluginAuthLenencClientData |
  Capability.CanHandleExpiredPasswords |
  Capability.DeprecateEof;

/** Offered to clients, never to the backend: the proxy splits multi-statements with its parser and runs each on its own (session/command-phase.ts). */
const proxyCapabilities = Capability.MultiStatements | Capability.MultiResults;

const clearPasswordPlugin = "mysql_clear_password";

/**
 * Collation ids (the handshake's character set) of big5, sjis, gbk, cp932 and gb18030: a byte
 * 0x5c or 0x27 can be the second byte of one of their characters, so the server would read
 * string literals otherwise than the export's parser (which reads UTF-8).
 */
const quoteUnsafeCollations = new Set([1, 84, 13, 88, 28, 87, 95, 96, 248, 249, 250]);

/**
 * Whether a client's character set (a collation id) is refused: one of the ids above, or any id
 * above 255. The handshake carries one byte, COM_CHANGE_USER two, and MariaDB's no-pad collations
 * of the same character sets have ids above 255 (big5_chinese_nopad_ci 1025, sjis 1037 and 1112,
 * gbk 1052 and 1111, big5_nopad_bin 1108, cp932 1119 and 1120): a COM_CHANGE_USER with 1025 made
 * the session big5 (found by an adversarial review: users' rows passed whole as a schema read).
 * No id a login can choose is lost.
 */
export const quoteUnsafeCharacterSet = (id: number): boolean => id > 255 || quoteUnsafeCollations.has(id);

/** Why a quote-unsafe character set is refused (1115 42000), at login and at COM_CHANGE_USER. */
export const quoteUnsafeRefusal = {
  code: 1115,
  sqlState: "42000",
  message:
    "the export takes no character set whose multi-byte characters can end in a quote or backslash byte (big5, sjis, gbk, cp932, gb18030): connect with utf8mb4",
};

/** The connection was answered (an error sent, or the peer gone): nothing more to do. */
export class LoginEnded extends Error {}

export interface LoggedIn {
  /** What client and backend agreed: the same on both sides (save CLIENT_SSL). */
  capabilities: number;
  /** The client sends multi-statements (CLIENT_MULTI_STATEMENTS with the proxy only: the proxy runs them one by one, the backend never agrees to it). */
  multiStatements: boolean;
  user: string;
  database?: string;
}

/** ER_ACCESS_DENIED_ERROR's number and SQLSTATE. */
const accessDenied = { code: 1045, sqlState: "28000" };

/** The audit log did not store the connection's records: ER_CON_COUNT_ERROR's number and SQLSTATE (the server is busy, "server rejected the connection"), a client may try again. */
const auditUnavailable = {
  code: 1040,
  sqlState: "08004",
  message: connectionNotAuditedMessage,
};

/**
 * The connection phase: the backend's greeting, offered to the client with the proxy's
 * capabilities (and CLIENT_SSL when the export has a certificate), TLS with the client, then
 * pass-through authentication (the client's answer goes to the backend and the exchange is
 * relayed until the backend's OK or ERR, which the client gets) or, when `mysql` enforces
 * authentication, direct verification: the client's cleartext password over TLS, verified by
 * the security configuration, then the proxy logs in to the backend itself. Read-only exports
 * then make the backend session read-only before the client's OK.
 */
export class MysqlLogin {
  constructor(
    private readonly deps: MysqlSessionDeps,
    private readonly client: PacketChannel,
    private readonly backend: PacketChannel,
  ) {}

  async run(): Promise<LoggedIn> {
    const { deps, client, backend } = this;
    const greeting = await backend.next();
    if (isErrPacket(greeting.payload)) {
      // The server refused the connection (too many connections, host blocked): the client gets its error.
      client.sequence = 0;
      await client.send(greeting.payload);
      throw new LoginEnded("backend refused the connection");
    }
    const handshake = decodeHandshake(greeting.payload);
    const offered = ((handshake.capabilities & passedCapabilities) | (deps.tls ? Capability.Ssl : 0) | proxyCapabilities) >>> 0;
    client.sequence = 0;
    await client.send(encodeHandshake({ ...handshake, capabilities: offered, mariaDbCapabilities: 0, serverVersion: handshake.serverVersion }));
    let first = await client.next();
    let tls = false;
    if (isSslRequest(first.payload)) {
      if (!deps.tls) return this.refuse(accessDenied, "this export does not offer TLS", "protocol.invalid");
      // MySQL clients start TLS right after the SSLRequest, unanswered: bytes already here are their ClientHello.
      client.upgrade((leftover) => {
        const secure = new TLSSocket(leftover.length > 0 ? carrying(client.socket, leftover) : client.socket, { isServer: true, secureContext: deps.tls });
        secure.on("error", () => secure.destroy());
        return secure;
      });
      tls = true;
      first = await client.next();
    }
    const response = decodeHandshakeResponse(first.payload);
    if (quoteUnsafeCharacterSet(response.characterSet)) return this.refuse(quoteUnsafeRefusal, quoteUnsafeRefusal.message, "character-set.refused");
    const capabilities = (response.capabilities & offered & passedCapabilities) >>> 0;
    const identity = { user: response.username, ...(response.database !== undefined ? { database: response.database } : {}) };
    let okStatus: number;
    if (deps.verification) okStatus = await this.directLogin(handshake, response, capabilities, tls);
    else okStatus = await this.passThrough(handshake, response, capabilities);
    if (!deps.policy.allowWrites) await this.makeReadOnly();
    await client.send(
      encodeOkPacket(
        { header: 0, affectedRows: 0, lastInsertId: 0, statusFlags: okStatus & ~ServerStatus.SessionStateChanged, warnings: 0, info: "" },
        capabilities,
      ),
    );
    const multiStatements = hasCapability(response.capabilities, Capability.MultiStatements) && hasCapability(response.capabilities, Capability.MultiResults);
    return { capabilities, multiStatements, ...identity };
  }

  /** The client's answer goes to the backend; the exchange is relayed until the backend says OK or ERR. */
  private async passThrough(handshake: Handshake, response: HandshakeResponse, capabilities: number): Promise<number> {
    const { deps, backend } = this;
    const passing = deps.storedAudit(
      "debug",
      "connection.pass-through",
      `connection ${deps.connectionId} authenticates with the backend of export ${deps.exportId}`,
      {
        exportId: deps.exportId,
        connectionId: deps.connectionId,
        component: "mysql",
        user: response.username,
      },
    );
    const secured = await this.secureBackend(handshake, response, capabilities);
    // The client's credentials go to the backend only once both records are stored.
    await this.recorded(passing, this.outgoing(response.username, "client", response.database));
    await backend.send(encodeHandshakeResponse({ ...response, capabilities: secured, mariaDbCapabilities: 0 }));
    return decodeOkPacket(await relayAuthentication(deps, this.client, backend, response.username), capabilities).statusFlags;
  }

  /** Direct verification (spec 5.1): the client's cleartext password over TLS, verified here; then the proxy logs in to the backend. */
  private async directLogin(handshake: Handshake, response: HandshakeResponse, capabilities: number, tls: boolean): Promise<number> {
    const { deps, client } = this;
    const verification = deps.verification!;
    if (!tls) return this.refuse(accessDenied, "this export takes passwords only over TLS: connect with TLS (ssl-mode REQUIRED)", "connection.tls-required");
    let password: Buffer;
    if (response.authPluginName === clearPasswordPlugin) password = passwordFromCleartext(response.authResponse);
    else {
      await client.send(encodeAuthSwitchRequest({ pluginName: clearPasswordPlugin, pluginData: Buffer.alloc(0) }));
      password = passwordFromCleartext((await client.next()).payload);
    }
    const outcome = await verification.verify(response.username, password.toString("utf8"), deps.connectionId);
    if (!outcome.ok) {
      if (outcome.failure === "unavailable")
        return this.refuse({ code: 1045, sqlState: "08004" }, "the export could not verify the credentials now; try again");
      if (outcome.failure === "token-needs-export-credentials") return this.refuse(accessDenied, outcome.reason);
      if (outcome.failure === "forbidden") return this.refuse(accessDenied, `Access denied for user '${response.username}': ${outcome.reason}`);
      // MySQL's own wording: a client cannot tell an unknown user from a wrong password.
      return this.refuse(accessDenied, `Access denied for user '${response.username}' (using password: YES)`);
    }
    // A caller without mysql:write has a read-only session, even on an export that allows writes: the statement checks and the backend's setting.
    if (!outcome.writes && deps.policy.allowWrites) deps.policy = { ...deps.policy, allowWrites: false };
    const identity = verification.backendIdentity ?? { user: response.username, password: password.toString("utf8") };
    return this.backendLogin(
      handshake,
      { ...response, username: identity.user },
      identity.password,
      capabilities,
      verification.backendIdentity ? "export" : "client",
    );
  }

  /** The proxy logs in to the backend with a password, answering the plugin the backend asks for. */
  private async backendLogin(
    handshake: Handshake,
    response: HandshakeResponse,
    password: string,
    capabilities: number,
    source: "export" | "client",
  ): Promise<number> {
    const { deps, backend } = this;
    let plugin = handshake.authPluginName || nativePasswordPlugin;
    let scramble = handshake.authPluginData;
    const first = authAnswer(plugin, password, scramble);
    const secured = await this.secureBackend(handshake, response, capabilities);
    await this.recorded(this.outgoing(response.username, source, response.database));
    await backend.send(
      encodeHandshakeResponse({
        ...response,
        capabilities: secured,
        mariaDbCapabilities: 0,
        authPluginName: first ? plugin : nativePasswordPlugin,
        authResponse: first ?? nativePasswordResponse(password, scramble),
      }),
    );
    for (;;) {
      const answer = (await backend.next()).payload;
      if (isOkPacket(answer)) return decodeOkPacket(answer, capabilities).statusFlags;
      if (isErrPacket(answer)) {
        deps.audit("warn", "connection.backend-login-failed", `export ${deps.exportId} could not log in to its backend as '${response.username}'`, {
          exportId: deps.exportId,
          connectionId: deps.connectionId,
          component: "mysql",
          user: response.username,
          identitySource: source,
        });
        return this.refuse(accessDenied, "the export could not log in to its backend");
      }
      if (answer[0] === 0xfe) {
        const request = decodeAuthSwitchRequest(answer);
        plugin = request.pluginName;
        scramble = scrambleOf(request.pluginData);
        const switched = authAnswer(plugin, password, scramble);
        if (!switched)
          return this.refuse(
            accessDenied,
            `the backend asks for the '${plugin}' plugin, which the export does not answer over plain TCP`,
            "connection.backend-login-failed",
          );
        await backend.send(switched);
        continue;
      }
      // caching_sha2_password: fast auth went through, or full auth with the server's RSA key (the backend link is plain TCP).
      const more = decodeAuthMoreData(answer);
      if (plugin === cachingSha2PasswordPlugin && more.length === 1 && more[0] === CachingSha2.FastAuthSuccess) continue;
      if (plugin === cachingSha2PasswordPlugin && more.length === 1 && more[0] === CachingSha2.PerformFullAuthentication) {
        await backend.send(Buffer.from([sha256PasswordRequestPublicKey]));
        continue;
      }
      if (plugin === cachingSha2PasswordPlugin && more.length > 1) {
        await backend.send(rsaEncryptedPassword(password, scramble, more.toString("latin1")));
        continue;
      }
      return this.refuse(accessDenied, "the backend's authentication exchange is not one the export answers", "connection.backend-login-failed");
    }
  }

  /**
   * TLS to the backend when the export asks for it (`backendTls`), before the HandshakeResponse:
   * an SSLRequest (sequence 1), then the TLS handshake over the same socket, checked as the mode
   * says (exports/backend-tls.ts). A server that does not offer CLIENT_SSL, or a handshake that
   * fails, ends the login: never cleartext when TLS is asked for. Returns the capabilities the
   * HandshakeResponse carries (CLIENT_SSL with TLS); the backend's sequence is left where the
   * response goes.
   */
  private async secureBackend(handshake: Handshake, response: HandshakeResponse, capabilities: number): Promise<number> {
    const { deps, backend } = this;
    const tls = deps.backendTls;
    backend.sequence = 1;
    if (!tls) return capabilities;
    const failed = (message: string, event: string, detail: string) => {
      deps.audit(
        "warn",
        event,
        `export ${deps.exportId} could not connect to ${deps.backend.host}:${deps.backend.port} as its backendTls (${tls.mode}) requires: ${detail}`,
        {
          exportId: deps.exportId,
          connectionId: deps.connectionId,
          component: "mysql",
          endpoint: `${deps.backend.host}:${deps.backend.port}`,
          backendTls: tls.mode,
          reason: detail,
        },
      );
      // CR_SSL_CONNECTION_ERROR, as a client library reports a TLS failure.
      return this.refuse({ code: 2026, sqlState: "HY000" }, message);
    };
    if (!hasCapability(handshake.capabilities, Capability.Ssl))
      return failed(
        `the export's backing store does not accept TLS, and this export requires it (backendTls: ${tls.mode})`,
        "connection.backend-tls-refused",
        "the server's greeting does not offer CLIENT_SSL",
      );
    const secured = (capabilities | Capability.Ssl) >>> 0;
    await backend.send(
      encodeSslRequest({ capabilities: secured, maxPacketSize: response.maxPacketSize, characterSet: response.characterSet, mariaDbCapabilities: 0 }),
    );
    let early = false;
    let secure: TLSSocket | undefined;
    backend.upgrade((leftover) => {
      // The server says nothing between the SSLRequest and the handshake: bytes here were not sent over TLS.
      early = leftover.length > 0;
      secure = connectTls({ socket: backend.socket, ...backendTlsOptions(deps.backend.host, tls) });
      return secure;
    });
    const outcome = await new Promise<Error | undefined>((resolve) => {
      if (early) return resolve(new Error("the server sent bytes before the TLS handshake"));
      const timer = setTimeout(() => resolve(new Error("TLS handshake timeout")), deps.limits.connectTimeoutMs);
      secure!.once("secureConnect", () => (clearTimeout(timer), resolve(undefined)));
      secure!.once(
        "error",
        (error: NodeJS.ErrnoException) => (clearTimeout(timer), resolve(new Error(error.code ? `${error.code}: ${error.message}` : error.message))),
      );
      secure!.once("close", () => (clearTimeout(timer), resolve(new Error("the connection closed during the TLS handshake"))));
    });
    secure!.on("error", () => secure!.destroy());
    if (outcome) {
      secure!.destroy();
      return failed(
        `the export could not ${verifiesCertificate(tls) ? "verify its backing store over TLS" : "set up TLS with its backing store"} (backendTls: ${tls.mode})`,
        "connection.backend-tls-failed",
        outcome.message,
      );
    }
    return secured;
  }

  /** A second layer under the statement checks: functions a SELECT calls cannot write either. */
  private async makeReadOnly(): Promise<void> {
    if (!(await makeBackendReadOnly(this.backend))) return this.refuse(readOnlyFailure, readOnlyFailure.message, "connection.read-only-failed");
  }

  /**
   * Spec 6 items 4 and 8: the connection goes on only once the audit log stored its records; when
   * it did not (a full audit stream), the login ends with an error before the backend gets the
   * HandshakeResponse (the client's or the export's credentials).
   */
  private async recorded(...records: Array<Promise<boolean>>): Promise<void> {
    if ((await Promise.all(records)).every(Boolean)) return;
    return this.refuse(auditUnavailable, auditUnavailable.message, "connection.audit-unavailable");
  }

  private outgoing(user: string, source: "export" | "client", database: string | undefined): Promise<boolean> {
    const { deps } = this;
    return deps.storedAudit("info", "connection.outgoing", `export ${deps.exportId} connects to ${deps.backend.host}:${deps.backend.port} as '${user}'`, {
      exportId: deps.exportId,
      connectionId: deps.connectionId,
      component: "mysql",
      endpoint: `${deps.backend.host}:${deps.backend.port}`,
      identity: user,
      identitySource: source,
      database: database ?? null,
    });
  }

  /** Answers the client with an error (audited when `event` is given) and ends the login. */
  private async refuse(error: { code: number; sqlState: string }, message: string, event?: string): Promise<never> {
    const { deps } = this;
    if (event)
      deps.audit("warn", event, `connection to export ${deps.exportId} refused: ${message}`, {
        exportId: deps.exportId,
        connectionId: deps.connectionId,
        component: "mysql",
        reason: message,
      });
    await this.client.send(encodeErrPacket({ ...error, message }));
    throw new LoginEnded(message);
  }
}

/**
 * Pass-through authentication (a login, or COM_CHANGE_USER): the client's first answer is with
 * the backend; the exchange (auth switch, more data) is relayed both ways until the backend says
 * OK (returned, not sent) or ERR (sent to the client as the server's own words, a wrong password,
 * audited; the login or the connection ends).
 */
export async function relayAuthentication(deps: MysqlSessionDeps, client: PacketChannel, backend: PacketChannel, user: string): Promise<Buffer> {
  for (;;) {
    const answer = await backend.next();
    if (isOkPacket(answer.payload)) return answer.payload;
    if (isErrPacket(answer.payload)) {
      // The backend's own error (a wrong password): the client reacts to it as to the server.
      await client.send(answer.payload);
      deps.audit("warn", "connection.backend-login-failed", `the backend of export ${deps.exportId} refused the login of '${user}'`, {
        exportId: deps.exportId,
        connectionId: deps.connectionId,
        component: "mysql",
        user,
      });
      throw new LoginEnded("backend refused the login");
    }
    await client.send(answer.payload);
    const next = await client.next();
    await backend.send(next.payload);
  }
}

/** ER_READ_ONLY_TRANSACTION-like answer when the backend session could not be made read-only. */
export const readOnlyFailure = { code: 1792, sqlState: "25006", message: "the export could not make the backend session read-only" };

/** A second layer under the statement checks, run after every login (and COM_RESET_CONNECTION, COM_CHANGE_USER, which undo it): true once the backend said OK. */
export async function makeBackendReadOnly(backend: PacketChannel): Promise<boolean> {
  backend.sequence = 0;
  await backend.send(Buffer.concat([Buffer.from([Command.Query]), Buffer.from("SET SESSION TRANSACTION READ ONLY")]));
  return isOkPacket((await backend.next()).payload);
}

/** What `plugin` answers for `password` and `scramble`; undefined for a plugin the proxy does not compute. */
function authAnswer(plugin: string, password: string, scramble: Buffer): Buffer | undefined {
  if (plugin === nativePasswordPlugin) return password === "" ? Buffer.alloc(0) : nativePasswordResponse(password, scramble);
  if (plugin === cachingSha2PasswordPlugin) return password === "" ? Buffer.alloc(0) : cachingSha2Response(password, scramble);
  if (plugin === clientEd25519Plugin) return ed25519Response(password, scramble);
  return undefined;
}
