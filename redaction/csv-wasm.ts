import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The part of the WebAssembly global used here (the build's lib has no DOM, where its types live). */
declare const WebAssembly:
  | undefined
  | {
      validate(bytes: Uint8Array): boolean;
      Module: new (bytes: Uint8Array) => object;
      Instance: new (module: object) => { exports: object };
    };

/** The exports of redaction/wasm/csv-structure.ts (see there for what each does). */
export interface CsvWasmExports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  dataStart(): number;
  scan(input: number, length: number, base: number, columns: number, maxRecordBytes: number, bounds: number, result: number): void;
  hashOf(at: number, length: number, tag: number): number;
  tableFits(entries: number, keyBytes: number, limit: number): number;
  clearTable(): void;
  setEntry(entry: number, value: number): void;
  classify(
    inputBase: number,
    bounds: number,
    rows: number,
    columns: number,
    userColumns: number,
    userColumnCount: number,
    tag: number,
    rowCodes: number,
    listed: number,
    result: number,
  ): void;
  writeRows(
    inputBase: number,
    bounds: number,
    rows: number,
    columns: number,
    rowCodes: number,
    verdicts: number,
    verdictCount: number,
    counts: number,
    terminator: number,
    terminatorLength: number,
    out: number,
    result: number,
  ): void;
}

/** Where the build puts the module (scripts/build-wasm.mjs, from redaction/wasm/csv-structure.ts). */
const wasmFile = join(__dirname, "wasm", "csv-structure.wasm");

/**
 * The CSV engine's WebAssembly module, one instance per thread; undefined on an engine without
 * WebAssembly SIMD or when the module was not built (`tsc` alone builds no WebAssembly; `npm run
 * build` and scripts/setup.mjs do, and test/unit/csv-structure.test.ts fails without it). The JS
 * code (csv-rows, user-id-fields) then does the same work, slower.
 */
function load(): CsvWasmExports | undefined {
  if (typeof WebAssembly === "undefined" || !existsSync(wasmFile)) return undefined;
  const bytes = readFileSync(wasmFile);
  if (!WebAssembly.validate(bytes)) return undefined;
  return new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports as unknown as CsvWasmExports;
}

export const csvWasm = load();

/** Makes the module's memory at least `bytes` long; its views must be made again after. */
export function reserveWasmMemory(module: CsvWasmExports, bytes: number): void {
  const memory = module.memory;
  if (memory.buffer.byteLength < bytes) memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / 65536));
}
