import { spawnSync } from "node:child_process";
import { join } from "node:path";

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
