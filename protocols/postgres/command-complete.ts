import { BackendCode } from "./codes";
import { BodyReader, equalBytes, MessageWriter } from "./wire";

export function decodeCommandComplete(body: Buffer): string {
  return new BodyReader(body).cstring();
}

export function encodeCommandComplete(tag: string): Buffer {
  return new MessageWriter().cstring(tag).finish(BackendCode.CommandComplete);
}

const selectPrefix = Buffer.from("SELECT ", "latin1");

/**
 * The count of a `SELECT n` tag, read from the CommandComplete body bytes[start, end) without
 * decoding it; undefined for any other tag (and for counts too long to be exact numbers here).
 */
export function selectCount(bytes: Buffer, start: number, end: number): number | undefined {
  const digitsEnd = end - 1;
  if (digitsEnd - start <= selectPrefix.length || digitsEnd - start > selectPrefix.length + 15 || bytes[digitsEnd] !== 0) return undefined;
  if (!equalBytes(bytes, start, start + selectPrefix.length, selectPrefix, 0, selectPrefix.length)) return undefined;
  let count = 0;
  for (let i = start + selectPrefix.length; i < digitsEnd; i++) {
    const digit = bytes[i]! - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    count = count * 10 + digit;
  }
  return count;
}

/** Tags whose count is the number of rows sent to the client, or rows moved over (MOVE): the others count rows written. */
const rowReturningTags = new Set(["SELECT", "FETCH", "MOVE"]);

/** The tag with its row count replaced, for commands whose count is the rows returned; other tags unchanged. */
export function withReturnedRows(tag: string, rows: number): string {
  const space = tag.indexOf(" ");
  if (space === -1 || !rowReturningTags.has(tag.slice(0, space))) return tag;
  return `${tag.slice(0, space)} ${rows}`;
}
