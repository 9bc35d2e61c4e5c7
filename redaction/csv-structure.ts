import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

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
}

/** The part of the WebAssembly global used here (the build's lib has no DOM, where its types live). */
declare const WebAssembly:
  | undefined
  | {
      validate(bytes: Uint8Array): boolean;
      Module: new (bytes: Uint8Array) => object;
      Instance: new (module: object) => { exports: object };
    };

interface ScannerExports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  dataStart(): number;
  scan(input: number, length: number, base: number, columns: number, maxRecordBytes: number, bounds: number, result: number): void;
}

/** Where the build puts the module (scripts/build-wasm.mjs, from redaction/wasm/csv-structure.ts). */
const wasmFile = join(__dirname, "wasm", "csv-structure.wasm");
/** Bytes after the input that the scanner reads (one 64-byte word past the end): kept zero. */
const padding = 128;
const resultBytes = 32;

/**
 * The WebAssembly CSV scanner of this thread; undefined on an engine without WebAssembly SIMD or
 * when the module was not built (`tsc` alone builds no WebAssembly; `npm run build` and
 * scripts/setup.mjs do, and test/unit/csv-structure.test.ts fails without it). The JS scanner
 * alone (csv-rows) then does the same work, slower.
 */
function load(): ScannerExports | undefined {
  if (typeof WebAssembly === "undefined" || !existsSync(wasmFile)) return undefined;
  const bytes = readFileSync(wasmFile);
  if (!WebAssembly.validate(bytes)) return undefined;
  return new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports as unknown as ScannerExports;
}

const scanner = load();

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
  const memory = scanner.memory;
  if (memory.buffer.byteLength < needed) memory.grow(Math.ceil((needed - memory.buffer.byteLength) / 65536));
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
  };
}
