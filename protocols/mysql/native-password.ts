import { timingSafeEqual } from "node:crypto";
import { digest, xorRepeating } from "./scramble-bytes";

/** The auth plugin name servers and clients exchange for the SHA-1 scramble. */
export const nativePasswordPlugin = "mysql_native_password";

/**
 * mysql_native_password's response: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))),
 * over the 20-byte scramble (without the NUL servers append). An empty password answers nothing.
 */
export function nativePasswordResponse(password: string | Buffer, scramble: Buffer): Buffer {
  if (password.length === 0) return Buffer.alloc(0);
  const stage1 = digest("sha1", Buffer.from(password));
  return xorRepeating(stage1, digest("sha1", scramble.subarray(0, 20), digest("sha1", stage1)));
}

/** What a server stores for mysql_native_password: SHA1(SHA1(password)) (the hex of mysql.user's '*…' string). */
export function nativePasswordHash(password: string | Buffer): Buffer {
  return digest("sha1", digest("sha1", Buffer.from(password)));
}

/**
 * The server's check of a response against the stored SHA1(SHA1(password)): the response XOR
 * SHA1(scramble + stored) recovers SHA1(password), whose SHA-1 must be the stored hash.
 */
export function verifyNativePassword(response: Buffer, scramble: Buffer, storedHash: Buffer): boolean {
  if (response.length !== 20 || storedHash.length !== 20) return false;
  const stage1 = xorRepeating(response, digest("sha1", scramble.subarray(0, 20), storedHash));
  return timingSafeEqual(digest("sha1", stage1), storedHash);
}
