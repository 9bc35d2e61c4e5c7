import type { Command } from "./commands";
import { ProtocolError } from "./protocol-error";

/** Commands that are their code alone: COM_QUIT, COM_PING, COM_RESET_CONNECTION, COM_STATISTICS, COM_DEBUG. */
export type BareCommand = typeof Command.Quit | typeof Command.Ping | typeof Command.ResetConnection | typeof Command.Statistics | typeof Command.Debug;

export function encodeBareCommand(command: BareCommand): Buffer {
  return Buffer.from([command]);
}

/** Checks that `payload` is `command` with nothing after it. */
export function decodeBareCommand(payload: Buffer, command: BareCommand): void {
  if (payload.length !== 1 || payload[0] !== command) throw new ProtocolError(`not a bare command 0x${command.toString(16)}`);
}
