import { BackendCode } from "./codes";
import { BodyReader, MessageWriter } from "./wire";

export function decodeCommandComplete(body: Buffer): string {
  return new BodyReader(body).cstring();
}

export function encodeCommandComplete(tag: string): Buffer {
  return new MessageWriter().cstring(tag).finish(BackendCode.CommandComplete);
}

/** Tags whose count is the number of rows sent to the client, or rows moved over (MOVE): the others count rows written. */
const rowReturningTags = new Set(["SELECT", "FETCH", "MOVE"]);

/** The tag with its row count replaced, for commands whose count is the rows returned; other tags unchanged. */
export function withReturnedRows(tag: string, rows: number): string {
  const space = tag.indexOf(" ");
  if (space === -1 || !rowReturningTags.has(tag.slice(0, space))) return tag;
  return `${tag.slice(0, space)} ${rows}`;
}
