import { createHash } from "node:crypto";

/** The digest of the parts concatenated: the auth plugins' building block. */
export function digest(algorithm: "sha1" | "sha256" | "sha512", ...parts: Buffer[]): Buffer {
  const hash = createHash(algorithm);
  for (const part of parts) hash.update(part);
  return hash.digest();
}

/** `a` XOR `b`, with `b` repeated as often as `a` needs (a password longer than the scramble). */
export function xorRepeating(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.allocUnsafe(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i % b.length]!;
  return out;
}
