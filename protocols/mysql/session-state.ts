import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** The kinds of session-state-change entries (enum_session_state_type). */
export const SessionStateType = {
  SystemVariables: 0,
  Schema: 1,
  StateChange: 2,
  Gtids: 3,
  TransactionCharacteristics: 4,
  TransactionState: 5,
} as const;

/** One entry of an OK packet's session-state-change block: its type and its data, as sent. */
export interface SessionStateEntry {
  type: number;
  data: Buffer;
}

/** The entries of a session-state-change block (OkPacket.sessionStateChanges). */
export function decodeSessionState(block: Buffer): SessionStateEntry[] {
  const reader = new PayloadReader(block);
  const entries: SessionStateEntry[] = [];
  while (!reader.atEnd) entries.push({ type: reader.int1(), data: Buffer.from(reader.lengthEncodedBytes()) });
  return entries;
}

export function encodeSessionState(entries: readonly SessionStateEntry[]): Buffer {
  const writer = new PayloadWriter();
  for (const entry of entries) writer.int1(entry.type).lengthEncodedBytes(entry.data);
  return writer.finish();
}

/** A SYSTEM_VARIABLES entry: a variable's new value (e.g. character_set_client after SET NAMES). */
export function decodeSystemVariable(data: Buffer): { name: string; value: string } {
  const reader = new PayloadReader(data);
  const variable = { name: reader.lengthEncodedString(), value: reader.lengthEncodedString() };
  reader.expectEnd("system variable entry");
  return variable;
}

export function encodeSystemVariable(name: string, value: string): Buffer {
  return new PayloadWriter().lengthEncodedString(name).lengthEncodedString(value).finish();
}

/** A SCHEMA entry: the new default database (USE, or a dropped current one). */
export function decodeSchemaChange(data: Buffer): string {
  const reader = new PayloadReader(data);
  const schema = reader.lengthEncodedString();
  reader.expectEnd("schema entry");
  return schema;
}

export function encodeSchemaChange(schema: string): Buffer {
  return new PayloadWriter().lengthEncodedString(schema).finish();
}

/** The entry of `type` a block holds, if any (a proxy watches SCHEMA to know the current database). */
export function findSessionStateEntry(entries: readonly SessionStateEntry[], type: number): SessionStateEntry | undefined {
  if (type < 0 || type > 0xff) throw new ProtocolError(`session state type ${type} is not a byte`);
  return entries.find((entry) => entry.type === type);
}
