import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { ExportBody } from "../../api/types";
import { checkBackendCa, checkHttpBackendCa } from "../../exports/backend-tls";
import { certificateAuthority } from "../../testkit/certificates";
import { tempDir } from "../../testkit/temp";

const refusal = (check: () => void): string => {
  try {
    check();
  } catch (error) {
    return JSON.stringify({ message: (error as Error).message, details: (error as { details?: unknown }).details });
  }
  return "taken";
};

test("backendCa: PEM certificates are taken; a bundle holding a private key is refused (GET /export would show it), as is text that is no certificate", () => {
  const authority = certificateAuthority(tempDir("backend-ca"), "test-ca");
  const certificate = readFileSync(authority.certFile, "utf8");
  const key = readFileSync(authority.keyFile, "utf8");
  const https = new URL("https://store.internal:9000");
  const wire = (backendCa: string) => ({ type: "postgres", backendTls: "verify-full", backendCa }) as unknown as ExportBody;
  const http = (backendCa: string) => ({ type: "objectstore", backendCa }) as unknown as ExportBody;
  assert.equal(
    refusal(() => checkBackendCa(wire(certificate))),
    "taken",
  );
  assert.equal(
    refusal(() => checkHttpBackendCa(http(certificate), https)),
    "taken",
  );
  for (const bundle of [`${certificate}${key}`, `${key}${certificate}`]) {
    assert.match(
      refusal(() => checkBackendCa(wire(bundle))),
      /private key/,
    );
    assert.match(
      refusal(() => checkHttpBackendCa(http(bundle), https)),
      /private key/,
    );
  }
  assert.match(
    refusal(() => checkHttpBackendCa(http("not a certificate"), https)),
    /not PEM certificates/,
  );
  assert.match(
    refusal(() => checkHttpBackendCa(http(certificate), new URL("http://store.internal:9000"))),
    /https:\/\/ endpoint/,
  );
});
