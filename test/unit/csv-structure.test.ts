import { test } from "node:test";
import assert from "node:assert/strict";
import { emptyRows, scanRows, scanRowsInJs, type ScannedRows } from "../../redaction/csv-rows";
import { regularRows, wasmScannerLoaded } from "../../redaction/csv-structure";
import { documentLimits } from "../../redaction/types";
import { randomCsv, seeded } from "../fixtures/csv-documents";

/** What a scan found: the bounds of the rows found only (the rest of the array is scratch). */
function found(rows: ScannedRows) {
  const { count, columns, end, line, emptyLines, fault } = rows;
  return { count, columns, end, line, emptyLines, fault, bounds: rows.bounds.subarray(0, count * columns * 2) };
}

/** scanRows (WebAssembly, then JS from where it stops) against the JS scanner alone, on the same call; a difference is named briefly (a diff of megabytes of bounds would take minutes). */
function assertSameScan(buf: Buffer, start: number, final: boolean, line: number, columns: number | undefined, what: string): ScannedRows {
  const expected = found(scanRowsInJs(buf, start, final, line, columns, emptyRows()));
  const rows = scanRows(buf, start, final, line, columns, emptyRows());
  const actual = found(rows);
  const input = buf.length <= 2000 ? JSON.stringify(buf.toString("latin1")) : `${buf.length} bytes`;
  const where = `${what}: ${input} from ${start}, final ${final}, columns ${columns}`;
  assert.deepEqual({ ...actual, bounds: actual.bounds.length }, { ...expected, bounds: expected.bounds.length }, where);
  const differs = actual.bounds.findIndex((bound, i) => bound !== expected.bounds[i]);
  assert.equal(differs, -1, `${where}: field bound ${differs} is ${actual.bounds[differs]}, not ${expected.bounds[differs]}`);
  return rows;
}

/** A CSV with fields that are long enough to cross 64-byte words, quoted with doubled quotes, CR and LF inside, multi-byte UTF-8, empty. */
function wordCrossingCsv(next: (n: number) => number, rows: number, columns: number, faults: boolean): Buffer {
  const pieces = ["a", "xyz", "é", "€", "𝄞", ",", '"', "\n", "\r\n", "\r", " "];
  const field = (): string => {
    const parts = Array.from({ length: next(3) === 0 ? next(40) : next(4) }, () => pieces[next(pieces.length)]);
    const text = parts.join("");
    if (/[",\r\n]/.test(text) || next(4) === 0) return `"${text.replaceAll('"', '""')}"`;
    return text;
  };
  const newline = ["\n", "\r\n"][next(2)];
  let out = "";
  for (let row = 0; row <= rows; row++) {
    if (next(12) === 0) out += next(2) === 0 ? "\n" : "\r\n";
    let line = Array.from({ length: columns }, field).join(",");
    if (faults && next(40) === 0) line += ['x"y', "\rz", ',"open', ",extra", '"a"b'][next(5)];
    out += line + (next(15) === 0 ? ["\n", "\r\n"][next(2)] : newline);
  }
  return Buffer.from(out);
}

test("the WebAssembly scanner runs here (Node 20 has WebAssembly SIMD), and finds the rows of a regular document itself", () => {
  assert.equal(wasmScannerLoaded, true);
  const buf = Buffer.from(`id,"e,mail",n\r\n${'u-1,"a ""b""\nc",1\r\n\r\n'.repeat(100)}u-2,x,`);
  const regular = regularRows(buf, 0, buf.length, undefined, documentLimits.maxRecordBytes);
  assert.ok(regular);
  assert.deepEqual(
    { rows: regular.rows, fields: regular.fields, end: regular.end, columns: regular.columns, emptyLines: regular.emptyLines, stopped: regular.stopped },
    { rows: 101, fields: 303, end: buf.indexOf("u-2"), columns: 3, emptyLines: 100, stopped: false },
  );
  assert.deepEqual([...regular.bounds.subarray(0, 6)], [0, 2, 3, 11, 12, 13]);
  assert.equal(regular.lineFeeds, 1 + 100 * 3);
});

test("boundary cases: the same rows, lines, ends and refusals as the JS scanner", () => {
  const cases = [
    "",
    "\n",
    "\r\n",
    "\r",
    "a",
    "a\r",
    "a,b\n1,2",
    "a,b\n1,2\r",
    "a,b\n1,2\r\n",
    'a,b\n"1",""\n',
    'a,b\n"1",""',
    'a,b\n"1","',
    'a,b\n"1",""""\n',
    'a,b\n"x""",y\n',
    'a,b\n"x"",y\n',
    'a,b\n"x" ,y\n',
    'a,b\nx",y\n',
    'a,b\n"",\n',
    "a,b\n,\n,\n",
    "a,b\n1,2,3\n",
    "a,b\n1\n",
    "a,b\r1,2\n",
    "a,b\n1\r2,3\n",
    'a,b\n"1\r2",3\n',
    'a,b\n"1\n2\n3",4\n5,6\n',
    "a\n\n\n\r\n\n",
    "a\n\r\n\r",
    "a\n\r\r\n",
    `a,b\n${"x".repeat(63)},y\n"${"q".repeat(62)}",z\n`,
    `a,b\n${"x".repeat(62)}\r\ny,z\r\n`,
    `a,b\n"${"x".repeat(61)}"\r\ny,z\r\n`,
    `a,b\n"${'""'.repeat(40)}",z\n`,
    `h\n${"é".repeat(40)}\n"${"€,".repeat(30)}"\n`,
  ];
  for (const text of cases) {
    const buf = Buffer.from(text);
    for (let cut = 0; cut <= buf.length; cut++) {
      for (const final of [false, true]) {
        assertSameScan(buf.subarray(0, cut), 0, final, 1, undefined, "header row");
        const body = text.indexOf("\n") + 1;
        if (body > 0 && body <= cut) assertSameScan(buf.subarray(0, cut), body, final, 2, 2, "body rows");
      }
    }
  }
});

test("a row over the size limit, and a refused row after many regular ones, are refused as the JS scanner refuses them", () => {
  const long = Buffer.concat([Buffer.from("a,b\n1,2\n"), Buffer.alloc(documentLimits.maxRecordBytes, 0x78), Buffer.from(",y\n3,4\n")]);
  const tooLarge = assertSameScan(long, 0, true, 1, undefined, "too large");
  assert.equal(tooLarge.fault?.code, "RECORD_TOO_LARGE");
  const quoted = Buffer.concat([Buffer.from('a,b\n"'), Buffer.alloc(documentLimits.maxRecordBytes, 0x0a), Buffer.from('",y\n')]);
  assert.equal(assertSameScan(quoted, 0, true, 1, undefined, "too large, quoted").fault?.code, "RECORD_TOO_LARGE");
  const ragged = Buffer.from(`a,b\n${"1,2\n".repeat(5000)}1,2,3\n${"1,2\n".repeat(10)}`);
  const refused = assertSameScan(ragged, 0, true, 1, undefined, "ragged");
  assert.deepEqual([refused.count, refused.fault?.code, refused.fault?.line], [5001, "CSV_RAGGED_ROW", 5002]);
});

test("property: 3000 seeded random CSVs (quotes, CR/LF, quoted newlines, empty fields and lines, UTF-8, faults), cut anywhere: the same scan as the JS scanner", () => {
  const next = seeded(1919);
  for (let doc = 0; doc < 3000; doc++) {
    const columns = 1 + next(6);
    const buf = doc % 2 === 0 ? randomCsv(next, { faults: next(3) === 0, rows: 30 }) : wordCrossingCsv(next, next(30), columns, next(3) === 0);
    // Cut anywhere (inside quotes, between CR and LF), start at the document or at its second line.
    const cut = next(4) === 0 ? buf.length : next(buf.length + 1);
    const piece = buf.subarray(0, cut);
    const final = next(2) === 0;
    assertSameScan(piece, 0, final, 1, undefined, `document ${doc}`);
    const second = piece.indexOf(0x0a) + 1;
    if (second > 0) assertSameScan(piece, second, final, 2, doc % 2 === 0 ? 5 : columns, `document ${doc} from its second line`);
  }
});

test("property: documents over the WebAssembly slice (2 MiB) give the same scan, cut anywhere", () => {
  const next = seeded(22);
  for (let doc = 0; doc < 3; doc++) {
    const parts: Buffer[] = [];
    let length = 0;
    while (length < (5 << 20) / 2 ** doc) {
      const part = wordCrossingCsv(next, 200, 4, false);
      parts.push(part);
      length += part.length;
    }
    const buf = Buffer.concat(parts);
    const rows = assertSameScan(buf.subarray(0, length - next(5000)), 0, doc === 0, 1, undefined, `large document ${doc}`);
    assert.ok(rows.count > 1000, `${rows.count} rows`);
  }
});
