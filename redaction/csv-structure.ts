import { csvWasm, reserveWasmMemory } from "./csv-wasm";

/** The regular rows at the start of a slice of input, found by the WebAssembly scanner. */
export interface RegularRows {
  rows: number;
  fields: number;
  /** Start and end of each field, pairs, as offsets in the whole buffer: a view of the scanner's memory, valid until its next call. */
  bounds: Int32Array;
  /** Where the rows end (a row start), in the whole buffer. */
  end: number;
  lineFeeds: number;
  emptyLines: number;
  /** The rows' field count; 0 when no row was found. */
  columns: number;
  /** It stopped at a row it leaves to the JS scanner, before the slice's end. */
  stopped: boolean;
  /** Where the input and the bounds are in the module's memory (valid until its next scan), for csv-row-engine. */
  inputAt: number;
  boundsAt: number;
}

/** Bytes after the input that the scanner reads (one 64-byte word past the end): kept zero. */
const padding = 128;
const resultBytes = 32;

const scanner = csvWasm;

/** Whether the WebAssembly scanner runs on this thread (tests check it does here). */
export const wasmScannerLoaded = scanner !== undefined;

/**
 * Scans `buf` from `start` (a row start), at most `length` bytes, for the rows the WebAssembly
 * scanner vouches for; undefined without WebAssembly SIMD. `columns`: the rows' field count,
 * undefined when the first row is the header.
 */
export function regularRows(buf: Buffer, start: number, length: number, columns: number | undefined, maxRecordBytes: number): RegularRows | undefined {
  if (!scanner) return undefined;
  const result = scanner.dataStart();
  const input = result + resultBytes + 64;
  const bounds = (input + length + padding + 7) & ~7;
  // A field takes at least one byte or a separator: at most length + 1 fields of 8 bytes.
  const needed = bounds + (length + 1) * 8;
  reserveWasmMemory(scanner, needed);
  const memory = scanner.memory;
  const bytes = new Uint8Array(memory.buffer);
  bytes[input - 1] = 0x0a;
  bytes.set(buf.subarray(start, start + length), input);
  bytes.fill(0, input + length, input + length + padding);
  scanner.scan(input, length, start, columns ?? 0, maxRecordBytes, bounds, result);
  const out = new Int32Array(memory.buffer, result, resultBytes / 4);
  return {
    rows: out[0],
    fields: out[1],
    bounds: new Int32Array(memory.buffer, bounds, out[1] * 2),
    end: start + out[2],
    lineFeeds: out[3],
    emptyLines: out[4],
    columns: out[5],
    stopped: out[6] === 1,
    inputAt: input,
    boundsAt: bounds,
  };
}
