import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { encodeSSLRequest } from "../../../protocols/postgres/startup";
import { backendTlsOptions, verifiesCertificate, type BackendTls } from "../../../exports/backend-tls";

export type { BackendTls };

/** Where a session's backend is, and how its connection is protected (no `tls`: plain TCP). */
export interface BackendEndpoint {
  host: string;
  port: number;
  tls?: BackendTls;
}

/** Why the backend connection could not be made as asked: what the client reads, and what is audited. */
export class BackendTlsFailure extends Error {
  constructor(
    readonly sqlState: string,
    readonly clientMessage: string,
    readonly auditEvent: string,
    detail: string,
  ) {
    super(detail);
  }
}

/** The server's one-byte answers to SSLRequest. */
const willingTls = 0x53; // 'S'
const unwillingTls = 0x4e; // 'N'

/**
 * A backend connection protected as `tls.mode` asks: SSLRequest, then, when the server answers
 * 'S', a TLS handshake over the same socket. A server answering 'N' is used in the clear only
 * in `prefer` mode; every other mode refuses (never falls back). `require` encrypts without
 * checking the certificate (as libpq), `verify-ca` checks it against `ca` (or the system's
 * roots), `verify-full` the host name too. `raw` is the TCP socket (to destroy it early);
 * `ready` resolves with the socket the session then talks over, or rejects with a
 * BackendTlsFailure (TLS refused or failed) or another error (the backend is unreachable).
 */
export function connectWithTls(
  endpoint: BackendEndpoint & { tls: BackendTls },
  timeoutMs: number,
): { raw: Socket; ready: Promise<{ socket: Socket; encrypted: boolean }> } {
  const { host, port, tls } = endpoint;
  const raw = connectTcp({ host, port });
  raw.setNoDelay(true);
  const ready = new Promise<{ socket: Socket; encrypted: boolean }>((resolve, reject) => {
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    // Connecting and the handshake together take at most the connect timeout.
    const timer = setTimeout(() => {
      raw.destroy();
      fail(new Error("connect timeout"));
    }, timeoutMs);
    // Kept for the socket's life: once `ready` is settled it does nothing, and the session has its own.
    raw.on("error", fail);
    raw.write(encodeSSLRequest());
    raw.once("close", () => fail(new Error("the connection closed before TLS was set up")));
    // Nothing more comes before the handshake (the server waits for it), so the socket is handed over as it flows, as libpq's peers do.
    raw.once("data", (answer: Buffer) => {
      // The answer is one byte; anything behind it was not sent over TLS by the server (CVE-2021-23222).
      if (answer.length !== 1 || (answer[0] !== willingTls && answer[0] !== unwillingTls)) {
        raw.destroy();
        fail(
          new BackendTlsFailure(
            "08001",
            "the export's backing store answered its TLS request wrongly",
            "connection.backend-tls-failed",
            "the answer to SSLRequest was not a single 'S' or 'N'",
          ),
        );
        return;
      }
      if (answer[0] === unwillingTls) {
        if (tls.mode === "prefer") {
          clearTimeout(timer);
          resolve({ socket: raw, encrypted: false });
          return;
        }
        raw.destroy();
        fail(
          new BackendTlsFailure(
            "08001",
            `the export's backing store does not accept TLS, and this export requires it (backendTls: ${tls.mode})`,
            "connection.backend-tls-refused",
            "the server answered 'N' to SSLRequest",
          ),
        );
        return;
      }
      const secure = connectTls({ socket: raw, ...backendTlsOptions(host, tls) });
      secure.once("secureConnect", () => {
        clearTimeout(timer);
        secure.removeListener("error", handshakeFailed);
        resolve({ socket: secure, encrypted: true });
      });
      const handshakeFailed = (error: Error) => {
        secure.destroy();
        const code = (error as NodeJS.ErrnoException).code ?? "";
        fail(
          new BackendTlsFailure(
            "08001",
            `the export could not ${verifiesCertificate(tls) ? "verify its backing store over TLS" : "set up TLS with its backing store"} (backendTls: ${tls.mode})`,
            "connection.backend-tls-failed",
            code ? `${code}: ${error.message}` : error.message,
          ),
        );
      };
      secure.on("error", handshakeFailed);
    });
  });
  return { raw, ready };
}
