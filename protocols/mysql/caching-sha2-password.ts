import { constants, privateDecrypt, publicEncrypt, timingSafeEqual, type KeyLike } from "node:crypto";
import { digest, xorRepeating } from "./scramble-bytes";

/** The auth plugin name of MySQL 8's default plugin. */
export const cachingSha2PasswordPlugin = "caching_sha2_password";

/**
 * The one-byte AuthMoreData bodies and client requests of caching_sha2_password's exchange
 * (sql/auth/sha2_password.cc): after the client's scramble the server answers fast-auth success
 * (it had the password's hash cached) or perform-full-authentication; the client then sends the
 * password in clear over TLS or a Unix socket, or asks for the server's RSA public key
 * (request-public-key) and sends the password RSA-encrypted.
 */
export const CachingSha2 = {
  RequestPublicKey: 0x02,
  FastAuthSuccess: 0x03,
  PerformFullAuthentication: 0x04,
} as const;

/** sha256_password asks for the public key with 0x01 instead. */
export const sha256PasswordRequestPublicKey = 0x01;

/**
 * The fast-auth response: SHA256(password) XOR SHA256(SHA256(SHA256(password)) + scramble).
 * An empty password answers nothing.
 */
export function cachingSha2Response(password: string | Buffer, scramble: Buffer): Buffer {
  if (password.length === 0) return Buffer.alloc(0);
  const stage1 = digest("sha256", Buffer.from(password));
  return xorRepeating(stage1, digest("sha256", digest("sha256", stage1), scramble.subarray(0, 20)));
}

/** What the server caches after a full authentication: SHA256(SHA256(password)). */
export function cachingSha2Hash(password: string | Buffer): Buffer {
  return digest("sha256", digest("sha256", Buffer.from(password)));
}

/** The server's fast-auth check: the response XOR SHA256(cached + scramble) is SHA256(password), whose SHA-256 is the cached hash. */
export function verifyCachingSha2(response: Buffer, scramble: Buffer, cachedHash: Buffer): boolean {
  if (response.length !== 32 || cachedHash.length !== 32) return false;
  const stage1 = xorRepeating(response, digest("sha256", cachedHash, scramble.subarray(0, 20)));
  return timingSafeEqual(digest("sha256", stage1), cachedHash);
}

/** The full-auth answer over a secure channel (TLS or a Unix socket): the password and a NUL. */
export function cleartextPasswordResponse(password: string | Buffer): Buffer {
  return Buffer.concat([Buffer.from(password), Buffer.alloc(1)]);
}

/** The password of a cleartext full-auth answer (its NUL dropped). */
export function passwordFromCleartext(response: Buffer): Buffer {
  return response.length > 0 && response[response.length - 1] === 0 ? response.subarray(0, -1) : response;
}

/**
 * The full-auth answer over an insecure channel: (password + NUL) XOR the scramble (repeated),
 * encrypted with the server's RSA public key under OAEP padding with SHA-1 (what servers since
 * MySQL 8.0.5 decrypt; the XOR binds the answer to this connection's scramble).
 */
export function rsaEncryptedPassword(password: string | Buffer, scramble: Buffer, publicKeyPem: KeyLike): Buffer {
  const xored = xorRepeating(cleartextPasswordResponse(password), scramble.subarray(0, 20));
  return publicEncrypt({ key: publicKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha1" }, xored);
}

/** The server's side of rsaEncryptedPassword: decrypt, XOR the scramble back out, drop the NUL. */
export function passwordFromRsaEncrypted(encrypted: Buffer, scramble: Buffer, privateKeyPem: KeyLike): Buffer {
  const xored = privateDecrypt({ key: privateKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha1" }, encrypted);
  return passwordFromCleartext(xorRepeating(xored, scramble.subarray(0, 20)));
}
