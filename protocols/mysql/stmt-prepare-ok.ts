import { Capability, hasCapability } from "./capabilities";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/**
 * COM_STMT_PREPARE_OK: the statement's id and shape. Then come `parameterCount` column
 * definitions (the parameters) and `columnCount` column definitions (the result), each group
 * ended by an EOF packet unless CLIENT_DEPRECATE_EOF was agreed.
 */
export interface StmtPrepareOk {
  statementId: number;
  columnCount: number;
  parameterCount: number;
  warnings: number;
  /** MySQL's CLIENT_OPTIONAL_RESULTSET_METADATA: whether the definitions follow; true without it. */
  metadataFollows: boolean;
}

export function decodeStmtPrepareOk(payload: Buffer, capabilities: number): StmtPrepareOk {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== 0x00) throw new ProtocolError("COM_STMT_PREPARE_OK starts with 0x00");
  const statementId = reader.int4();
  const columnCount = reader.int2();
  const parameterCount = reader.int2();
  reader.skip(1);
  // Servers before 4.1.10 stopped here.
  const warnings = reader.atEnd ? 0 : reader.int2();
  const metadataFollows = hasCapability(capabilities, Capability.OptionalResultsetMetadata) && !reader.atEnd ? reader.int1() === 1 : true;
  reader.expectEnd("COM_STMT_PREPARE_OK");
  return { statementId, columnCount, parameterCount, warnings, metadataFollows };
}

export function encodeStmtPrepareOk(ok: StmtPrepareOk, capabilities: number): Buffer {
  const writer = new PayloadWriter().int1(0x00).int4(ok.statementId).int2(ok.columnCount).int2(ok.parameterCount).int1(0).int2(ok.warnings);
  if (hasCapability(capabilities, Capability.OptionalResultsetMetadata)) writer.int1(ok.metadataFollows ? 1 : 0);
  return writer.finish();
}
