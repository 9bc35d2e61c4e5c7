import type { Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

/** The content codings a backend's body is decoded from, as error messages name them. */
export const decodedCodings = "gzip, deflate and br";

const decoders: Record<string, () => Transform> = { gzip: createGunzip, "x-gzip": createGunzip, deflate: createInflate, br: createBrotliDecompress };

/**
 * What undoes a body's Content-Encoding (RFC 9110 8.4): null when there is none to undo (absent,
 * empty or `identity`), a decoder for gzip, deflate or br, undefined for any other coding or for
 * more than one: such a body is never read as if it were plain.
 */
export function contentDecoder(header: string | string[] | undefined): (() => Transform) | null | undefined {
  const codings = (Array.isArray(header) ? header.join(",") : (header ?? ""))
    .split(",")
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== "" && coding !== "identity");
  if (codings.length === 0) return null;
  return codings.length === 1 ? decoders[codings[0]!] : undefined;
}
