import { Command } from "./commands";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** COM_SET_OPTION's option: turns multi-statements (several statements in one COM_QUERY) on or off. */
export const SetOption = {
  MultiStatementsOn: 0,
  MultiStatementsOff: 1,
} as const;

export function decodeSetOption(payload: Buffer): number {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== Command.SetOption) throw new ProtocolError("not a COM_SET_OPTION");
  const option = reader.int2();
  reader.expectEnd("COM_SET_OPTION");
  return option;
}

export function encodeSetOption(option: number): Buffer {
  return new PayloadWriter().int1(Command.SetOption).int2(option).finish();
}
