import type { Command } from "./commands";
import { ProtocolError } from "./protocol-error";
import { PayloadWriter } from "./wire";

/**
 * The commands whose body is one string to the end of the packet: COM_INIT_DB (a database
 * name, what USE sends) and COM_STMT_PREPARE (the SQL to prepare). COM_QUERY may carry query
 * attributes before its SQL: query.ts.
 */
export type TextCommand = typeof Command.InitDb | typeof Command.StmtPrepare;

export function decodeTextCommand(payload: Buffer, command: TextCommand): string {
  if (payload.length === 0 || payload[0] !== command) throw new ProtocolError(`not a packet of command 0x${command.toString(16)}`);
  return payload.toString("utf8", 1);
}

export function encodeTextCommand(command: TextCommand, text: string): Buffer {
  return new PayloadWriter().int1(command).bytes(Buffer.from(text, "utf8")).finish();
}
