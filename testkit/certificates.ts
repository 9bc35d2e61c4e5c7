import { spawnSync } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";

function openssl(args: string[]): void {
  const made = spawnSync("openssl", args, { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`openssl ${args[0]} failed: ${made.stderr}`);
}

/** A CA of its own, made by openssl in `dir`. */
export function certificateAuthority(dir: string, name: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}.key`);
  openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "2", "-subj", `/CN=${name}`]);
  return { certFile, keyFile };
}

/** A server certificate for the name `localhost` only (not 127.0.0.1), signed by `ca`. */
export function serverCertificate(dir: string, ca: { certFile: string; keyFile: string }): { certFile: string; keyFile: string } {
  const keyFile = join(dir, "server.key");
  const request = join(dir, "server.csr");
  const certFile = join(dir, "server.pem");
  const extensions = join(dir, "server.ext");
  writeFileSync(extensions, "subjectAltName=DNS:localhost\n");
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", request, "-subj", "/CN=localhost"]);
  openssl([
    "x509",
    "-req",
    "-in",
    request,
    "-CA",
    ca.certFile,
    "-CAkey",
    ca.keyFile,
    "-CAcreateserial",
    "-out",
    certFile,
    "-days",
    "2",
    "-extfile",
    extensions,
  ]);
  // PostgreSQL refuses a key others can read.
  chmodSync(keyFile, 0o600);
  return { certFile, keyFile };
}

/** A self-signed certificate for 127.0.0.1 and localhost, made by openssl in `dir`: its own CA file. */
export function selfSignedCertificate(dir: string, commonName: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, `${commonName}-cert.pem`);
  const keyFile = join(dir, `${commonName}-key.pem`);
  const made = spawnSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "2",
      "-subj",
      `/CN=${commonName}`,
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ],
    { encoding: "utf8" },
  );
  if (made.status !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr}`);
  return { certFile, keyFile };
}
