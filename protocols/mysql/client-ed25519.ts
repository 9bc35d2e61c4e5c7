import { createPublicKey, verify } from "node:crypto";
import { fromLittleEndian, littleEndian, multiplyBase, reduceScalar } from "./ed25519-arithmetic";
import { digest } from "./scramble-bytes";

/** MariaDB's ed25519 auth plugin, as the client names it. */
export const clientEd25519Plugin = "client_ed25519";

/**
 * The secret scalar and nonce prefix of a password (plugin/auth_ed25519/ref10/sign.c,
 * crypto_sign): RFC 8032's key expansion with the password in place of the 32-byte seed —
 * SHA-512 of the password, the first half clamped into the scalar, the second half the prefix.
 */
function expandPassword(password: Buffer): { scalar: bigint; prefix: Buffer } {
  const hash = digest("sha512", password);
  const clamped = Buffer.from(hash.subarray(0, 32));
  clamped[0]! &= 248;
  clamped[31]! &= 127;
  clamped[31]! |= 64;
  return { scalar: fromLittleEndian(clamped), prefix: hash.subarray(32) };
}

/**
 * The public key MariaDB stores for a password (mysql.global_priv's authentication_string is
 * its base64 without padding, what `SELECT ed25519_password('…')` answers).
 */
export function ed25519PublicKey(password: string | Buffer): Buffer {
  return multiplyBase(expandPassword(Buffer.from(password)).scalar);
}

/** The 43-character form MariaDB keeps in authentication_string. */
export function ed25519PasswordHash(password: string | Buffer): string {
  return ed25519PublicKey(password).toString("base64").replace(/=+$/, "");
}

/**
 * client_ed25519's response: the 64-byte Ed25519 signature (R, S) of the server's 32-byte
 * scramble under the password-derived key. With a 32-byte password it is exactly node:crypto's
 * Ed25519 signature with that password as seed (the tests check it).
 */
export function ed25519Response(password: string | Buffer, scramble: Buffer): Buffer {
  const { scalar, prefix } = expandPassword(Buffer.from(password));
  const publicKey = multiplyBase(scalar);
  const r = reduceScalar(fromLittleEndian(digest("sha512", prefix, scramble)));
  const R = multiplyBase(r);
  const k = reduceScalar(fromLittleEndian(digest("sha512", R, publicKey, scramble)));
  const S = reduceScalar(r + k * scalar);
  return Buffer.concat([R, littleEndian(S, 32)]);
}

/** The server's check: the response is a valid Ed25519 signature of the scramble under the stored public key (node:crypto verifies). */
export function verifyEd25519Response(response: Buffer, scramble: Buffer, publicKey: Buffer): boolean {
  if (response.length !== 64 || publicKey.length !== 32) return false;
  try {
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: publicKey.toString("base64url") }, format: "jwk" });
    return verify(null, scramble, key, response);
  } catch {
    // A public key that is not a curve point.
    return false;
  }
}
