import { binaryValueExtent } from "./binary-value-length";
import { encodeBinaryValue } from "./binary-value";
import { unsignedParameterFlag } from "./column-types";
import { isNullAt, nullBitmapLength, NullBitmapOffset, setNullAt } from "./null-bitmap";
import { ProtocolError } from "./protocol-error";
import type { PayloadReader, PayloadWriter } from "./wire";

/** One parameter value bound by COM_STMT_EXECUTE (or a query attribute of COM_QUERY). */
export interface BoundParameter {
  /** A ColumnType. */
  type: number;
  unsigned: boolean;
  /** Query attributes (CLIENT_QUERY_ATTRIBUTES) have names; statement parameters an empty one. */
  name?: string;
  /** The value's content (without its length prefix); null for NULL. */
  value: Buffer | null;
  /** Sent before by COM_STMT_SEND_LONG_DATA: no bytes here, `value` is empty. */
  sentAsLongData?: boolean;
}

/** A parameter's type as it travels: the type byte and a flag byte. */
export interface ParameterType {
  type: number;
  unsigned: boolean;
}

export interface BoundParameterOptions {
  /** Names follow the types (CLIENT_QUERY_ATTRIBUTES). */
  named: boolean;
  /** The types bound by the statement's previous execute, used when this one does not resend them. */
  previousTypes?: readonly ParameterType[];
  /** Parameters whose value came by COM_STMT_SEND_LONG_DATA since the last execute. */
  longData?: ReadonlySet<number>;
}

export interface BoundParameters {
  parameters: BoundParameter[];
  /** Whether the types were sent (new_params_bind_flag). */
  typesSent: boolean;
}

/** Reads `count` parameters: NULL bitmap (offset 0), new-params-bound flag, types (and names), values. */
export function readBoundParameters(reader: PayloadReader, count: number, options: BoundParameterOptions): BoundParameters {
  const bitmap = reader.bytes(nullBitmapLength(count, NullBitmapOffset.ExecuteParameters));
  const typesSent = reader.int1() === 1;
  let types: ParameterType[];
  const names: string[] = [];
  if (typesSent) {
    types = [];
    for (let i = 0; i < count; i++) {
      const type = reader.int1();
      types.push({ type, unsigned: (reader.int1() & unsignedParameterFlag) !== 0 });
      if (options.named) names.push(reader.lengthEncodedString());
    }
  } else {
    if (!options.previousTypes || options.previousTypes.length !== count)
      throw new ProtocolError("parameter types were not sent and none are known for this statement");
    types = [...options.previousTypes];
  }
  const parameters: BoundParameter[] = [];
  for (let i = 0; i < count; i++) {
    const { type, unsigned } = types[i]!;
    const parameter: BoundParameter = { type, unsigned, value: null };
    if (options.named) parameter.name = names[i] ?? "";
    if (isNullAt(bitmap, 0, i, NullBitmapOffset.ExecuteParameters)) {
      // NULL: no bytes.
    } else if (options.longData?.has(i)) {
      parameter.value = Buffer.alloc(0);
      parameter.sentAsLongData = true;
    } else {
      const extent = binaryValueExtent(type, reader.buffer, reader.position, reader.limit);
      parameter.value = reader.buffer.subarray(extent.start, extent.start + extent.length);
      reader.moveTo(extent.next);
    }
    parameters.push(parameter);
  }
  return { parameters, typesSent };
}

export function writeBoundParameters(writer: PayloadWriter, parameters: readonly BoundParameter[], options: { named: boolean; sendTypes: boolean }): void {
  const bitmap = Buffer.alloc(nullBitmapLength(parameters.length, NullBitmapOffset.ExecuteParameters));
  parameters.forEach((parameter, i) => {
    if (parameter.value === null) setNullAt(bitmap, 0, i, NullBitmapOffset.ExecuteParameters);
  });
  writer.bytes(bitmap).int1(options.sendTypes ? 1 : 0);
  if (options.sendTypes) {
    for (const parameter of parameters) {
      writer.int1(parameter.type).int1(parameter.unsigned ? unsignedParameterFlag : 0);
      if (options.named) writer.lengthEncodedString(parameter.name ?? "");
    }
  }
  for (const parameter of parameters) {
    if (parameter.value !== null && !parameter.sentAsLongData) writer.bytes(encodeBinaryValue(parameter.type, parameter.value));
  }
}
