import { readBoundParameters, writeBoundParameters, type BoundParameter } from "./bound-parameters";
import { Capability, hasCapability } from "./capabilities";
import { Command } from "./commands";
import { ProtocolError } from "./protocol-error";
import { PayloadReader, PayloadWriter } from "./wire";

/**
 * COM_QUERY: SQL text to the end of the packet. Under MySQL 8's CLIENT_QUERY_ATTRIBUTES, named
 * attribute values come first (bound as COM_STMT_EXECUTE binds parameters).
 */
export interface Query {
  sql: string;
  attributes: BoundParameter[];
}

export function decodeQuery(payload: Buffer, capabilities: number): Query {
  const reader = new PayloadReader(payload);
  if (reader.int1() !== Command.Query) throw new ProtocolError("not a COM_QUERY");
  let attributes: BoundParameter[] = [];
  if (hasCapability(capabilities, Capability.QueryAttributes)) {
    const count = reader.lengthEncodedNumber("attribute count");
    // The parameter set count is always 1.
    if (reader.lengthEncodedNumber("parameter set count") !== 1) throw new ProtocolError("COM_QUERY's parameter set count is not 1");
    if (count > 0) attributes = readBoundParameters(reader, count, { named: true }).parameters;
  }
  return { sql: reader.rest().toString("utf8"), attributes };
}

export function encodeQuery(query: Query, capabilities: number): Buffer {
  const writer = new PayloadWriter().int1(Command.Query);
  if (hasCapability(capabilities, Capability.QueryAttributes)) {
    writer.lengthEncoded(query.attributes.length).lengthEncoded(1);
    if (query.attributes.length > 0) writeBoundParameters(writer, query.attributes, { named: true, sendTypes: true });
  } else if (query.attributes.length > 0) {
    throw new ProtocolError("query attributes need CLIENT_QUERY_ATTRIBUTES");
  }
  return writer.bytes(Buffer.from(query.sql, "utf8")).finish();
}
