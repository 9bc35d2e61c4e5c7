import { X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import type { ConnectionOptions } from "node:tls";
import type { BackendTlsMode, ExportRecord } from "../actors/export/export-actor";
import { HandlerError } from "../actors/runtime/errors";
import type { ExportBody } from "../api/types";

/** TLS to a wire export's backend, as the export asks for it (libpq's sslmode names); `ca`: PEM, for the verify modes. */
export interface BackendTls {
  mode: Exclude<BackendTlsMode, "disable">;
  ca?: string;
}

/** `backendCa` belongs to the verify modes (the others check no certificate) and must be PEM certificates Node can read. */
export function checkBackendCa(body: ExportBody): void {
  if (body.backendCa === undefined) return;
  if (body.backendTls !== "verify-ca" && body.backendTls !== "verify-full")
    throw new HandlerError("EXPORT_INVALID", "backendCa is used only to verify the backend's certificate: give backendTls verify-ca or verify-full", {
      details: [{ path: "backendCa", problem: "needs backendTls verify-ca or verify-full" }],
    });
  checkPemCertificates(body.backendCa);
}

/**
 * An HTTP export's `backendCa` (FHIR, objectstore): the CA its https:// backend's certificate is
 * verified against instead of the system's roots (the host name is checked as always); with an
 * http:// endpoint there is no certificate to verify.
 */
export function checkHttpBackendCa(body: ExportBody, endpoint: URL): void {
  if (body.backendCa === undefined) return;
  if (endpoint.protocol !== "https:")
    throw new HandlerError("EXPORT_INVALID", "backendCa verifies an https:// backend's certificate: this endpoint is http://", {
      details: [{ path: "backendCa", problem: "needs an https:// endpoint" }],
    });
  checkPemCertificates(body.backendCa);
}

function checkPemCertificates(text: string): void {
  // GET /export shows backendCa as given: a bundle pasted with its key would show the key to every reader.
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text))
    throw new HandlerError("EXPORT_INVALID", "backendCa holds a private key: give only the CA's certificates (GET /export shows backendCa as given)", {
      details: [{ path: "backendCa", problem: "must not hold a private key" }],
    });
  const pems = text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  try {
    if (pems.length === 0) throw new Error("no certificate");
    for (const pem of pems) new X509Certificate(pem);
  } catch {
    throw new HandlerError("EXPORT_INVALID", "backendCa is not PEM certificates", {
      details: [{ path: "backendCa", problem: "must be one or more PEM certificates" }],
    });
  }
}

/** TLS to the backend as the export's record asks (none for `disable`, the default). */
export function backendTlsOf(record: ExportRecord): { tls?: BackendTls } {
  const mode = record.backendTls ?? "disable";
  if (mode === "disable") return {};
  return { tls: { mode, ...(record.backendCa !== undefined ? { ca: record.backendCa } : {}) } };
}

/** Whether the mode checks the server's certificate (verify-ca, verify-full). */
export function verifiesCertificate(tls: BackendTls): boolean {
  return tls.mode === "verify-ca" || tls.mode === "verify-full";
}

/** What each mode checks of the server's certificate, for node:tls `connect` over the backend socket. */
export function backendTlsOptions(host: string, tls: BackendTls): ConnectionOptions {
  const verifies = verifiesCertificate(tls);
  return {
    host,
    // SNI takes a host name, never an address (RFC 6066).
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ...(verifies && tls.ca !== undefined ? { ca: tls.ca } : {}),
    rejectUnauthorized: verifies,
    // verify-ca: signed by the CA, whatever name it carries; verify-full: Node's check of the host name (or address).
    ...(tls.mode === "verify-ca" ? { checkServerIdentity: () => undefined } : {}),
  };
}
