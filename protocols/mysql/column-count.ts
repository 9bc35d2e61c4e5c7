import { Capability, hasCapability } from "./capabilities";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/** The packet that starts a text or binary resultset: how many column definitions follow. */
export interface ColumnCount {
  columnCount: number;
  /**
   * Under MySQL's CLIENT_OPTIONAL_RESULTSET_METADATA, whether column definitions follow at all
   * (resultset_metadata=NONE leaves them out); always true without it.
   */
  metadataFollows: boolean;
}

/** A resultset has at most as many columns as COM_STMT_PREPARE_OK's 2-byte count can say: more is a framing error. */
const maxColumns = 0xffff;

export function decodeColumnCount(payload: Buffer, capabilities: number): ColumnCount {
  const reader = new PayloadReader(payload);
  const columnCount = reader.lengthEncodedNumber("column count");
  if (columnCount === 0 || columnCount > maxColumns) throw new ProtocolError(`column count ${columnCount} is out of range`);
  const metadataFollows = hasCapability(capabilities, Capability.OptionalResultsetMetadata) ? reader.int1() === 1 : true;
  reader.expectEnd("column count packet");
  return { columnCount, metadataFollows };
}

export function encodeColumnCount(count: ColumnCount, capabilities: number): Buffer {
  const writer = new PayloadWriter().lengthEncoded(count.columnCount);
  if (hasCapability(capabilities, Capability.OptionalResultsetMetadata)) writer.int1(count.metadataFollows ? 1 : 0);
  return writer.finish();
}
