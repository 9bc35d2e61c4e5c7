/**
 * The Ed25519 group operations (RFC 8032, section 5.1) over BigInt, for the one signature
 * node:crypto cannot make: MariaDB's client_ed25519 derives its key from SHA-512 of a password of
 * any length, where node:crypto only signs with a 32-byte seed. Points are in extended
 * coordinates (X, Y, Z, T), x = X/Z, y = Y/Z, xy = T/Z. Not constant-time: the proxy signs
 * with passwords it was configured with, on its own machine.
 */

const p = 2n ** 255n - 19n;
/** The order of the base point. */
export const groupOrder = 2n ** 252n + 27742317777372353535851937790883648493n;
const d = mod(-121665n * inverse(121666n));

interface Point {
  x: bigint;
  y: bigint;
  z: bigint;
  t: bigint;
}

const baseX = 15112221349535400772501151409588531511454012693041857206046113283949847762202n;
const baseY = 46316835694926478169428394003475163141307993866256225615783033603165251855960n;
const base: Point = { x: baseX, y: baseY, z: 1n, t: mod(baseX * baseY) };
const identity: Point = { x: 0n, y: 1n, z: 1n, t: 0n };

function mod(value: bigint, modulus = p): bigint {
  const rest = value % modulus;
  return rest >= 0n ? rest : rest + modulus;
}

function power(value: bigint, exponent: bigint): bigint {
  let result = 1n;
  let square = mod(value);
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = mod(result * square);
    square = mod(square * square);
  }
  return result;
}

function inverse(value: bigint): bigint {
  return power(value, p - 2n);
}

/** RFC 8032 5.1.4: addition on the twisted Edwards curve, a = -1. */
function add(P: Point, Q: Point): Point {
  const a = mod((P.y - P.x) * (Q.y - Q.x));
  const b = mod((P.y + P.x) * (Q.y + Q.x));
  const c = mod(2n * d * P.t * Q.t);
  const e = mod(2n * P.z * Q.z);
  const E = b - a;
  const F = e - c;
  const G = e + c;
  const H = b + a;
  return { x: mod(E * F), y: mod(G * H), z: mod(F * G), t: mod(E * H) };
}

function multiply(scalar: bigint, point: Point): Point {
  let result = identity;
  let addend = point;
  for (let s = scalar; s > 0n; s >>= 1n) {
    if (s & 1n) result = add(result, addend);
    addend = add(addend, addend);
  }
  return result;
}

/** RFC 8032 5.1.2: y little-endian, the sign of x in the top bit. */
function encodePoint(point: Point): Buffer {
  const zInverse = inverse(point.z);
  const x = mod(point.x * zInverse);
  const y = mod(point.y * zInverse);
  const out = littleEndian(y, 32);
  if (x & 1n) out[31]! |= 0x80;
  return out;
}

export function littleEndian(value: bigint, length: number): Buffer {
  const out = Buffer.alloc(length);
  let rest = value;
  for (let i = 0; i < length; i++, rest >>= 8n) out[i] = Number(rest & 0xffn);
  return out;
}

export function fromLittleEndian(bytes: Buffer): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

/** The encoded point scalar·B. */
export function multiplyBase(scalar: bigint): Buffer {
  return encodePoint(multiply(scalar, base));
}

export function reduceScalar(value: bigint): bigint {
  return mod(value, groupOrder);
}
