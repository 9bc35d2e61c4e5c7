import { Command } from "./commands";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** Commands on a prepared statement that carry its id alone: COM_STMT_CLOSE (no answer) and COM_STMT_RESET (OK or ERR). */
export type StatementIdCommand = typeof Command.StmtClose | typeof Command.StmtReset;

export function decodeStatementIdCommand(payload: Buffer, command: StatementIdCommand): number {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== command) throw new ProtocolError(`not a packet of command 0x${command.toString(16)}`);
  const statementId = reader.int4();
  reader.expectEnd("statement command");
  return statementId;
}

export function encodeStatementIdCommand(command: StatementIdCommand, statementId: number): Buffer {
  return new PayloadWriter().int1(command).int4(statementId).finish();
}

/** COM_STMT_FETCH: `rows` more rows of the cursor a COM_STMT_EXECUTE opened. */
export interface StmtFetch {
  statementId: number;
  rows: number;
}

export function decodeStmtFetch(payload: Buffer): StmtFetch {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== Command.StmtFetch) throw new ProtocolError("not a COM_STMT_FETCH");
  const fetch = { statementId: reader.int4(), rows: reader.int4() };
  reader.expectEnd("COM_STMT_FETCH");
  return fetch;
}

export function encodeStmtFetch(fetch: StmtFetch): Buffer {
  return new PayloadWriter().int1(Command.StmtFetch).int4(fetch.statementId).int4(fetch.rows).finish();
}

/** COM_STMT_SEND_LONG_DATA: a chunk of one parameter's value, sent before the execute (no answer). */
export interface StmtSendLongData {
  statementId: number;
  parameter: number;
  data: Buffer;
}

export function decodeStmtSendLongData(payload: Buffer): StmtSendLongData {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== Command.StmtSendLongData) throw new ProtocolError("not a COM_STMT_SEND_LONG_DATA");
  return { statementId: reader.int4(), parameter: reader.int2(), data: reader.rest() };
}

export function encodeStmtSendLongData(chunk: StmtSendLongData): Buffer {
  return new PayloadWriter().int1(Command.StmtSendLongData).int4(chunk.statementId).int2(chunk.parameter).bytes(chunk.data).finish();
}
