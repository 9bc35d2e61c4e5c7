import { test } from "node:test";
import assert from "node:assert/strict";
import { CsvRowEngine, type BlockRows } from "../../redaction/csv-row-engine";
import { emptyCounts, emptyRows, scanRows, writeRows } from "../../redaction/csv-rows";
import { csvWasm } from "../../redaction/csv-wasm";
import { UserIdFields } from "../../redaction/user-id-fields";
import type { CsvCounts, CsvVerdict } from "../../redaction/types";
import { seeded } from "../fixtures/csv-documents";

/** What the JS way gives for a block: the scan, the users without a verdict (in row order), and once all are known the output and counts. */
function reference(
  buf: Buffer,
  final: boolean,
  line: number,
  columns: number,
  userColumns: number[],
  terminator: Buffer,
  verdictOf: (id: string) => CsvVerdict | undefined,
) {
  const rows = scanRows(buf, 0, final, line, columns, emptyRows());
  const ids = new UserIdFields(userColumns).idsOf(buf, rows, 0);
  const users = [...new Set(ids.filter((id): id is string => id !== undefined && !verdictOf(id)))];
  const { count, end, emptyLines, fault } = rows;
  const scan = { count, columns: rows.columns, end, line: rows.line, emptyLines, ...(fault ? { fault } : {}) };
  if (users.length > 0) return { scan, users };
  const counts = emptyCounts();
  const output = writeRows(
    buf,
    rows,
    0,
    ids.map((id) => (id === undefined ? undefined : verdictOf(id))),
    terminator,
    counts,
  );
  return { scan, users, output, counts };
}

/** The engine's answer in the reference's shape; the output named by its length and first byte that differs (a diff of a megabyte would take minutes). */
function shape(rows: { scan: object; users: string[]; output?: Buffer; counts?: CsvCounts }, expected?: Buffer) {
  const output = rows.output && { length: rows.output.length, firstDifference: expected ? firstDifference(rows.output, expected) : -1 };
  return { scan: rows.scan, users: rows.users, output, counts: rows.counts };
}

function firstDifference(a: Buffer, b: Buffer): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** A raw user-id field: plain, quoted, with "" escapes, empty, quoted empty (the next column is read), naming no one, long. */
function idField(next: (n: number) => number): string {
  const user = `u-${next(40)}`;
  switch (next(12)) {
    case 0:
      return "";
    case 1:
      return '""';
    case 2:
      return `"${user}"`;
    case 3:
      return `"${user} ""q"", x"`;
    case 4:
      return `"line\nbreak ${next(3)}"`; // a control character: names no one
    case 5:
      return "y".repeat(195 + next(10)); // around the 200-character limit of an id
    case 6:
      return next(4) === 0 ? "z".repeat(300) : "nobody\u0001"; // too long for the table (the JS way), or no one
    default:
      return user;
  }
}

function otherField(next: (n: number) => number): string {
  switch (next(8)) {
    case 0:
      return "";
    case 1:
      return `"a,b ""c""\r\nd"`;
    case 2:
      return "é€".repeat(next(100));
    case 3:
      return "x".repeat(next(400));
    default:
      return `v${next(1000)}`;
  }
}

/** A body of rows (no header) of `columns` fields with ids in `userColumns`, LF or CRLF, empty lines, sometimes a fault. */
function randomBody(next: (n: number) => number, rows: number, columns: number, userColumns: number[], faults: boolean): Buffer {
  const newline = next(2) === 0 ? "\n" : "\r\n";
  let out = "";
  for (let row = 0; row < rows; row++) {
    if (next(20) === 0) out += newline;
    const fields = Array.from({ length: columns }, (_, c) => (userColumns.includes(c) ? idField(next) : otherField(next)));
    let line = fields.join(",");
    if (faults && next(50) === 0) line += [',"open', ",extra", 'x"y', "\rz"][next(4)];
    out += line + newline;
  }
  return Buffer.from(out);
}

/** Verdicts for a document: allowed or not, with a random set of kept columns. */
function randomVerdicts(next: (n: number) => number, columns: number): CsvVerdict[] {
  return Array.from({ length: 1 + next(4) }, (_, id) => ({
    id,
    allowed: next(4) !== 0,
    reason: "R",
    keep: Uint8Array.from({ length: columns }, () => next(2)),
  }));
}

/**
 * Runs a block through the engine as the worker does: with the users known so far; when it names
 * others, they become known and it runs again. Checks each answer against the JS way.
 */
function assertSameRows(
  engine: CsvRowEngine,
  terminator: Buffer,
  buf: Buffer,
  final: boolean,
  line: number,
  columns: number,
  userColumns: number[],
  verdicts: CsvVerdict[],
  known: Map<string, CsvVerdict>,
  verdictFor: (id: string) => CsvVerdict,
  what: string,
): BlockRows | undefined {
  const verdictOf = (id: string) => known.get(id);
  const first = engine.redact(buf, final, line, columns, verdicts, verdictOf);
  if (!first) return undefined;
  const expectedFirst = reference(buf, final, line, columns, userColumns, terminator, verdictOf);
  assert.deepEqual(shape(first, expectedFirst.output), shape(expectedFirst), what);
  if (first.users.length === 0) return first;
  for (const user of first.users) known.set(user, verdictFor(user));
  const second = engine.redact(buf, final, line, columns, verdicts, verdictOf);
  assert.ok(second, `${what}: the second time`);
  const expected = reference(buf, final, line, columns, userColumns, terminator, verdictOf);
  assert.deepEqual(shape(second, expected.output), shape(expected), `${what}: the second time`);
  assert.equal(second.users.length, 0, what);
  return second;
}

test("the WebAssembly row engine runs here", () => {
  assert.ok(csvWasm);
  assert.ok(CsvRowEngine.create([0], Buffer.from("\n")));
});

test('property: 1500 seeded random blocks (quoted ids, "" escapes, empty id columns, several id columns, ids naming no one, long fields, CRLF, faults) cut anywhere: the same scan, users asked, output and counts as the JS way', () => {
  const next = seeded(2222);
  let viaWasm = 0;
  let asked = 0;
  for (let doc = 0; doc < 1500; doc++) {
    const columns = 1 + next(6);
    const userColumns = Array.from({ length: 1 + next(Math.min(3, columns)) }, () => next(columns)).filter((c, i, all) => all.indexOf(c) === i);
    const body = randomBody(next, 1 + next(60), columns, userColumns, next(4) === 0);
    const verdicts = randomVerdicts(next, columns);
    const verdictFor = (id: string) => verdicts[[...id].reduce((h, ch) => h + ch.charCodeAt(0), 0) % verdicts.length];
    const known = new Map<string, CsvVerdict>();
    // Some users are known before (met in earlier blocks), the rest are asked for.
    for (let u = 0; u < 40; u++) if (next(3) === 0) known.set(`u-${u}`, verdictFor(`u-${u}`));
    const terminator = Buffer.from(next(2) === 0 ? "\n" : "\r\n");
    const engine = CsvRowEngine.create(userColumns, terminator)!;
    // Two blocks of one document, the second cut anywhere; the table is kept between them.
    const cut = next(body.length + 1);
    const firstEnd = body.indexOf("\n", next(body.length)) + 1 || body.length;
    const pieces: Array<[Buffer, boolean]> = [
      [body.subarray(0, firstEnd), true],
      [body.subarray(firstEnd, Math.max(firstEnd, cut)), next(2) === 0],
    ];
    for (const [index, [piece, final]] of pieces.entries()) {
      const rows = assertSameRows(
        engine,
        terminator,
        piece,
        final,
        1 + next(5),
        columns,
        userColumns,
        verdicts,
        known,
        verdictFor,
        `document ${doc} block ${index}: ${JSON.stringify(piece.toString("latin1"))} columns ${columns} user columns ${userColumns}`,
      );
      if (rows) viaWasm++;
    }
    if (known.size > 0) asked++;
  }
  // Most blocks take the WebAssembly way (the rest have an id field over 256 bytes).
  assert.ok(viaWasm > 2000, `${viaWasm} blocks in WebAssembly`);
  assert.ok(asked > 1000, `${asked}`);
});

test("blocks of 1 MiB with 2,000 users: the same output and counts as the JS way, block after block", () => {
  const next = seeded(7);
  const columns = 8;
  const userColumns = [1, 0];
  const verdicts = randomVerdicts(next, columns);
  const verdictFor = (id: string) => verdicts[Number(id.replace(/\D/g, "")) % verdicts.length];
  const known = new Map<string, CsvVerdict>();
  const terminator = Buffer.from("\r\n");
  const engine = CsvRowEngine.create(userColumns, terminator)!;
  for (let block = 0; block < 4; block++) {
    let text = "";
    while (text.length < 1 << 20) {
      const id = next(10) === 0 ? `"u-${next(2000)}"` : `u-${next(2000)}`;
      text += `${next(5) === 0 ? "" : id},${next(7) === 0 ? '""' : "other"},"a,b",${next(100)},x,"y ""z""",${"w".repeat(next(30))},end\r\n`;
    }
    const rows = assertSameRows(engine, terminator, Buffer.from(text), block === 3, 1, columns, userColumns, verdicts, known, verdictFor, `block ${block}`);
    assert.ok(rows?.output && rows.output.length > 1000);
  }
});

test("the table answers by bytes, not by hash: two ids with the same 32-bit hash get their own verdicts", () => {
  const module = csvWasm!;
  const engine = CsvRowEngine.create([0], Buffer.from("\n"))!;
  // The engine's tag is the last one given: hash with it (the test checks the collision it relies on).
  const tag = probeTag();
  const at = module.dataStart();
  const seen = new Map<number, string>();
  let pair: [string, string] | undefined;
  for (let i = 0; !pair; i++) {
    assert.ok(i < 2_000_000, "no collision found");
    const id = `u-${i.toString(36)}`;
    const bytes = new Uint8Array(module.memory.buffer);
    bytes.set(Buffer.from(id), at);
    const hash = module.hashOf(at, id.length, tag);
    const other = seen.get(hash);
    if (other !== undefined) pair = [other, id];
    else seen.set(hash, id);
  }
  const [a, b] = pair;
  const collides = (id: string) => {
    new Uint8Array(module.memory.buffer).set(Buffer.from(id), at);
    return module.hashOf(at, id.length, tag);
  };
  assert.equal(collides(a), collides(b), "the two ids hash alike");
  const allowed: CsvVerdict = { id: 0, allowed: true, reason: "A", keep: Uint8Array.of(1, 1) };
  const dropped: CsvVerdict = { id: 1, allowed: false, reason: "D", keep: Uint8Array.of(0, 0) };
  const known = new Map([[a, allowed]]);
  const block = Buffer.from(`${a},kept\n${b},secret\n`);
  const first = engine.redact(block, true, 1, 2, [allowed, dropped], (id) => known.get(id));
  assert.deepEqual(first?.users, [b], "the second id is asked for, not given the first's verdict");
  known.set(b, dropped);
  const second = engine.redact(block, true, 1, 2, [allowed, dropped], (id) => known.get(id));
  assert.equal(second?.output?.toString(), `${a},kept\n`);
  assert.deepEqual(second?.counts, { rowsIn: 2, noUserId: 0, rowsByVerdict: [1, 1] });
  // And the other way round, in a fresh table: b met first.
  engine.forget();
  const third = engine.redact(Buffer.from(`${b},secret\n${a},kept\n`), true, 1, 2, [allowed, dropped], (id) => known.get(id));
  assert.equal(third?.output?.toString(), `${a},kept\n`);
});

test("documents do not share answers: the same bytes in another document are asked for again", () => {
  const allowed: CsvVerdict = { id: 0, allowed: true, reason: "A", keep: Uint8Array.of(1, 1) };
  const dropped: CsvVerdict = { id: 0, allowed: false, reason: "D", keep: Uint8Array.of(0, 0) };
  const block = Buffer.from("u-1,secret\n");
  const one = CsvRowEngine.create([0], Buffer.from("\n"))!;
  assert.equal(one.redact(block, true, 1, 2, [allowed], () => allowed)?.output?.toString(), "u-1,secret\n");
  const other = CsvRowEngine.create([0], Buffer.from("\n"))!;
  assert.deepEqual(other.redact(block, true, 1, 2, [dropped], () => undefined)?.users, ["u-1"]);
  assert.equal(other.redact(block, true, 1, 2, [dropped], () => dropped)?.output?.toString(), "");
});

/** The tag the next engine gets minus one: engines are numbered as they are made. */
function probeTag(): number {
  const probe = CsvRowEngine.create([0], Buffer.from("\n")) as unknown as { tag: number };
  return probe.tag - 1;
}
