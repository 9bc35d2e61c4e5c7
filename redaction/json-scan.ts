/** Byte-level helpers over JSON text: where values end, how deep they nest. No parsing. */

export const enum JsonByte {
  Tab = 0x09, // \t
  LF = 0x0a, // \n
  CR = 0x0d, // \r
  Space = 0x20, // (space)
  Quote = 0x22, // "
  Comma = 0x2c, // ,
  Colon = 0x3a, // :
  OpenBracket = 0x5b, // [
  Backslash = 0x5c, // \
  CloseBracket = 0x5d, // ]
  OpenBrace = 0x7b, // {
  CloseBrace = 0x7d, // }
}

export class JsonDepthError extends Error {}

function isWhitespace(byte: number): boolean {
  return byte === JsonByte.Space || byte === JsonByte.LF || byte === JsonByte.CR || byte === JsonByte.Tab;
}

export function skipWhitespace(buf: Buffer, pos: number, end = buf.length): number {
  while (pos < end && isWhitespace(buf[pos])) pos++;
  return pos;
}

/** End (exclusive) of the string starting at `pos` (a quote), or -1 when `buf` ends first. */
export function stringEnd(buf: Buffer, pos: number, end = buf.length): number {
  for (let p = pos + 1; p < end; p++) {
    const byte = buf[p];
    if (byte === JsonByte.Backslash) p++;
    else if (byte === JsonByte.Quote) return p + 1;
  }
  return -1;
}

/**
 * End (exclusive) of the JSON value starting at `pos`, or -1 when `buf` ends before it does (a
 * number or literal running to the end counts as unfinished unless `final`). Throws
 * JsonDepthError past `maxDepth` nested objects and arrays. Syntax is checked by the parser later.
 */
export function valueEnd(buf: Buffer, pos: number, maxDepth: number, final: boolean, end = buf.length): number {
  const first = buf[pos];
  if (first === JsonByte.Quote) return stringEnd(buf, pos, end);
  if (first !== JsonByte.OpenBrace && first !== JsonByte.OpenBracket) {
    let p = pos;
    while (p < end) {
      const byte = buf[p];
      if (byte === JsonByte.Comma || byte === JsonByte.CloseBrace || byte === JsonByte.CloseBracket || isWhitespace(byte)) return p;
      p++;
    }
    return final ? p : -1;
  }
  let depth = 0;
  for (let p = pos; p < end; p++) {
    const byte = buf[p];
    if (byte === JsonByte.Quote) {
      const after = stringEnd(buf, p, end);
      if (after === -1) return -1;
      p = after - 1;
    } else if (byte === JsonByte.OpenBrace || byte === JsonByte.OpenBracket) {
      if (++depth > maxDepth) throw new JsonDepthError(`nests deeper than ${maxDepth} levels`);
    } else if (byte === JsonByte.CloseBrace || byte === JsonByte.CloseBracket) {
      if (--depth === 0) return p + 1;
    }
  }
  return -1;
}
