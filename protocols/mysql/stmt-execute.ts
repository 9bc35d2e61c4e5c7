import { readBoundParameters, writeBoundParameters, type BoundParameter, type ParameterType } from "./bound-parameters";
import { Capability, hasCapability } from "./capabilities";
import { Command } from "./commands";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** COM_STMT_EXECUTE's flags byte: the cursor to open (rows then come by COM_STMT_FETCH). */
export const CursorFlag = {
  NoCursor: 0x00,
  ReadOnly: 0x01,
  ForUpdate: 0x02,
  Scrollable: 0x04,
  /** MySQL 8 (CLIENT_QUERY_ATTRIBUTES): the parameter count is sent even for a statement without parameters. */
  ParameterCountAvailable: 0x08,
} as const;

/**
 * MariaDB runs a COM_STMT_EXECUTE with this id on the statement prepared just before, so a
 * client can send prepare and execute without waiting (a proxy must resolve it the same way).
 */
export const lastPreparedStatementId = 0xffffffff;

export interface StmtExecute {
  statementId: number;
  flags: number;
  /** Always 1. */
  iterationCount: number;
  parameters: BoundParameter[];
  /** Whether the parameter types were sent (the first execute sends them; later ones may not). */
  typesSent: boolean;
}

export interface StmtExecuteContext {
  /** The statement's parameter count, from its COM_STMT_PREPARE_OK (the packet does not say). */
  parameterCount: number;
  capabilities: number;
  /** The types bound by the statement's previous execute. */
  previousTypes?: readonly ParameterType[];
  /** Parameters sent by COM_STMT_SEND_LONG_DATA since the last execute. */
  longData?: ReadonlySet<number>;
}

export function decodeStmtExecute(payload: Buffer, context: StmtExecuteContext): StmtExecute {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== Command.StmtExecute) throw new ProtocolError("not a COM_STMT_EXECUTE");
  const statementId = reader.int4();
  const flags = reader.int1();
  const iterationCount = reader.int4();
  const queryAttributes = hasCapability(context.capabilities, Capability.QueryAttributes);
  let count = context.parameterCount;
  const execute: StmtExecute = { statementId, flags, iterationCount, parameters: [], typesSent: false };
  if (count > 0 || (queryAttributes && flags & CursorFlag.ParameterCountAvailable)) {
    // With query attributes the count includes them: the statement's parameters first, then named attributes.
    if (queryAttributes) count = reader.lengthEncodedNumber("parameter count");
    if (count < context.parameterCount) throw new ProtocolError(`COM_STMT_EXECUTE binds ${count} parameters of ${context.parameterCount}`);
    if (count > 0) {
      const options = {
        named: queryAttributes,
        ...(context.previousTypes ? { previousTypes: context.previousTypes } : {}),
        ...(context.longData ? { longData: context.longData } : {}),
      };
      const bound = readBoundParameters(reader, count, options);
      execute.parameters = bound.parameters;
      execute.typesSent = bound.typesSent;
    }
  }
  reader.expectEnd("COM_STMT_EXECUTE");
  return execute;
}

export function encodeStmtExecute(execute: StmtExecute, capabilities: number): Buffer {
  const writer = new PayloadWriter().int1(Command.StmtExecute).int4(execute.statementId).int1(execute.flags).int4(execute.iterationCount);
  const queryAttributes = hasCapability(capabilities, Capability.QueryAttributes);
  const count = execute.parameters.length;
  if (count > 0 || (queryAttributes && execute.flags & CursorFlag.ParameterCountAvailable)) {
    if (queryAttributes) writer.lengthEncoded(count);
    if (count > 0) writeBoundParameters(writer, execute.parameters, { named: queryAttributes, sendTypes: execute.typesSent });
  }
  return writer.finish();
}
