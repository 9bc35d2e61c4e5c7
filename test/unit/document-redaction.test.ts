import { test } from "node:test";
import assert from "node:assert/strict";
import { parse } from "csv-parse/sync";
import { stringify } from "csv-stringify/sync";
import { planRecords, redactRecord, userIdOf, type RecordPlan } from "../../decision/record-redaction";
import type { Decision } from "../../decision/types";
import { CsvRedactor } from "../../redaction/csv-redactor";
import { JsonRedactor } from "../../redaction/json-redactor";
import { DocumentError, documentLimits, type DecisionSource, type RowDecision } from "../../redaction/types";
import {
  brokenCsvInputs,
  bytewise,
  csvInputs,
  csvPlan,
  FakeDecisions,
  outcomes,
  policy,
  randomCsv,
  randomSplits,
  run,
  seeded,
  splits,
  whole,
} from "../fixtures/csv-documents";
import { nestedIdsGroup, twoIdsGroup } from "../fixtures/user-id-groups";

/** The reference: csv-parse and csv-stringify, redacting by the same rules. */
function referenceCsv(input: Buffer, plan: RecordPlan): string[][] {
  const rows = parse(input, { bom: true, skip_empty_lines: true, relax_column_count: false, record_delimiter: ["\r\n", "\n"] }) as string[][];
  const [header, ...data] = rows;
  const out = [header];
  for (const row of data) {
    const userId = plan.resourceFields
      .map((field) => header.flatMap((name, c) => (name === field ? [row[c]] : [])).find((v) => v !== ""))
      .find((v) => v !== undefined);
    if (userId === undefined) continue;
    const decision = outcomes[userId];
    if (!decision?.allowed) continue;
    out.push(
      row.map((value, c) => {
        const category = plan.categoryOf.get(header[c]);
        return category !== undefined && decision.categories.has(category) ? value : "";
      }),
    );
  }
  return parse(stringify(out), {}) as string[][];
}

for (const [name, text] of Object.entries(csvInputs)) {
  for (const [splitName, split] of Object.entries(splits)) {
    test(`CSV ${name} (${splitName} chunks): the same records as the csv-parse reference`, async () => {
      const input = Buffer.from(text);
      const out = await run(new CsvRedactor(csvPlan, new FakeDecisions()), input, split);
      assert.deepEqual(parse(out, { bom: true }), referenceCsv(input, csvPlan));
    });
  }
}

test("CSV output is byte for byte: header as it came, kept fields copied with their quotes, emptied fields empty", async () => {
  const input = Buffer.from('\ufeffid,alt id,email,clicks,note\r\n"u-contact",,"a,b@x",3,"secret"\r\nu-none,,x,1,y\r\n');
  const redactor = new CsvRedactor(csvPlan, new FakeDecisions());
  const out = await run(redactor, input, whole);
  assert.equal(out.toString(), '\ufeffid,alt id,email,clicks,note\r\n,,"a,b@x",,\r\n');
  const tally = redactor.tally();
  assert.equal(tally.rowsIn, 2);
  assert.equal(tally.rowsKept, 1);
  assert.deepEqual(tally.droppedBy, { NO_TERMS_ACCEPTED: 1 });
  assert.deepEqual(tally.fields.email, {
    category: "contact",
    kept: 1,
    emptied: 0,
    why: "category 'contact': emptied in rows whose user the purpose may not use it for",
  });
  assert.deepEqual(tally.fields.clicks, {
    category: "usage",
    kept: 0,
    emptied: 1,
    why: "category 'usage': emptied in rows whose user the purpose may not use it for",
  });
  assert.deepEqual(tally.fields.note, { category: null, kept: 0, emptied: 1, why: "mapped to no category" });
  assert.deepEqual(tally.fields.id, { category: null, kept: 0, emptied: 1, why: "mapped to no category" });
  assert.equal(tally.bytesIn, input.length);
  assert.equal(tally.bytesOut, out.length);
});

test("CSV users are looked up in bulk, once per chunk", async () => {
  const decisions = new FakeDecisions();
  await run(new CsvRedactor(csvPlan, decisions), Buffer.from(csvInputs.simple), whole);
  assert.deepEqual(decisions.prepared, [["u-all", "u-contact", "u-none"]]);
});

async function csvError(text: string | Buffer, split = whole): Promise<DocumentError> {
  try {
    await run(new CsvRedactor(csvPlan, new FakeDecisions()), Buffer.isBuffer(text) ? text : Buffer.from(text), split);
  } catch (error) {
    assert.ok(error instanceof DocumentError, String(error));
    return error;
  }
  assert.fail("the document was accepted");
}

test("CSV errors name the code and the line the row starts on", async () => {
  for (const split of [whole, bytewise]) {
    for (const [text, code, line] of brokenCsvInputs) assert.deepEqual(await csvError(text, split).then((e) => [e.code, e.where.line]), [code, line], text);
  }
});

test("a CSV whose header row names no user-id field is refused before anything is written: a first line that is a row never passes as the header", async () => {
  const redactor = new CsvRedactor(csvPlan, new FakeDecisions());
  let written = Buffer.alloc(0);
  await assert.rejects(
    (async () => {
      for (const chunk of [Buffer.from("u-none,secret@x"), Buffer.from("\nu-all,a\n")]) written = Buffer.concat([written, await redactor.push(chunk)]);
      written = Buffer.concat([written, await redactor.end()]);
    })(),
    (error: unknown) => error instanceof DocumentError && error.code === "CSV_NO_USER_COLUMN" && error.where.line === 1 && /id, alt id/.test(error.message),
  );
  assert.equal(written.length, 0, "nothing of the first line was handed out");
  const { bytesIn, bytesOut, rowsIn } = redactor.tally();
  assert.deepEqual({ bytesIn, bytesOut, rowsIn }, { bytesIn: 0, bytesOut: 0, rowsIn: 0 }, "the refused row is the first: nothing before it");
});

test("a CSV row over the size limit fails the job instead of growing without bound", async () => {
  const long = Buffer.concat([Buffer.from('id,email\nu-all,"'), Buffer.alloc(documentLimits.maxRecordBytes + 10, 0x61), Buffer.from('"\n')]);
  const error = await csvError(long, (length) => Array.from({ length: Math.ceil(length / 65536) }, (_, i) => Math.min(65536, length - i * 65536)));
  assert.equal(error.code, "RECORD_TOO_LARGE");
  assert.equal(error.where.line, 2);
});

const jsonPlan = planRecords(policy, {
  name: "json",
  fieldMappings: [
    { recordField: "owner.id", resourceContext: true },
    { recordField: "contact.email", categoryId: "contact" },
    { recordField: "big", categoryId: "usage" },
    { recordField: "usage", categoryId: "usage" },
    { recordField: "note" },
  ],
});

const jsonRecords = [
  '{"owner": {"id": "u-all"}, "contact": {"email": "a@x", "phone": "555"}, "big": 12345678901234567890, "usage": {"clicks": [1, 2]}, "note": "n"}',
  '{"owner":{"id":"u-contact"},"contact":{"email":"c@x"},"big":1.50,"usage":{},"extra":"e"}',
  '{"owner": {"id": "u-none"}, "contact": {"email": "x"}}',
  '{"contact": {"email": "no owner"}}',
  '{"owner": {"id": "u-all"}, "__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": 1}}, "esc\\"aped": "v"}',
];

const asDecision = (row: RowDecision): Decision => ({
  allowed: row.allowed,
  flow: "platform",
  categoryIds: [...row.categories],
  reasons: [],
  summary: "",
  revision: 1,
});

function referenceJson(records: string[]): unknown[] {
  return records.flatMap((text) => {
    const record = JSON.parse(text) as Record<string, never>;
    const userId = userIdOf(record, jsonPlan);
    const decision = userId === undefined ? undefined : outcomes[userId];
    return decision ? [redactRecord(record, jsonPlan, asDecision(decision)).record] : [];
  });
}

for (const [framing, text] of [
  ["array", `\ufeff[\n  ${jsonRecords.join(",\n  ")}\n]\n`],
  ["lines", `${jsonRecords.join("\n")}\n\n`],
] as const) {
  for (const [splitName, split] of Object.entries(splits)) {
    test(`JSON ${framing} (${splitName} chunks): the same records as redacting each parsed record`, async () => {
      const out = (await run(new JsonRedactor(jsonPlan, new FakeDecisions(), framing), Buffer.from(text), split)).toString();
      const records =
        framing === "array"
          ? (JSON.parse(out) as unknown[])
          : out
              .trim()
              .split("\n")
              .map((line) => JSON.parse(line) as unknown);
      assert.deepEqual(records, referenceJson(jsonRecords));
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  }
}

test("JSON output keeps kept values byte for byte: numbers keep every digit", async () => {
  const out = (await run(new JsonRedactor(jsonPlan, new FakeDecisions(), "lines"), Buffer.from(jsonRecords.slice(0, 2).join("\n")), whole)).toString();
  assert.equal(
    out,
    '{"owner":{"id":null},"contact":{"email":"a@x","phone":null},"big":12345678901234567890,"usage":{"clicks": [1, 2]},"note":null}\n' +
      '{"owner":{"id":null},"contact":{"email":"c@x"},"big":null,"usage":null,"extra":null}\n',
  );
});

test("an empty JSON array gives an empty array", async () => {
  assert.equal((await run(new JsonRedactor(jsonPlan, new FakeDecisions(), "array"), Buffer.from(" [ ] "), bytewise)).toString(), "[]\n");
});

async function jsonError(text: string, framing: "array" | "lines"): Promise<DocumentError> {
  try {
    await run(new JsonRedactor(jsonPlan, new FakeDecisions(), framing), Buffer.from(text), whole);
  } catch (error) {
    assert.ok(error instanceof DocumentError, String(error));
    return error;
  }
  assert.fail("the document was accepted");
}

test("JSON errors: not an array, not objects, invalid, unclosed, trailing text, pathological nesting", async () => {
  const deep = `{"owner":{"id":"u-all"},"x":${"[".repeat(100)}${"]".repeat(100)}}`;
  assert.equal((await jsonError('{"a":1}', "array")).code, "JSON_NOT_ARRAY");
  assert.deepEqual(await jsonError('[{"a":1}, 2]', "array").then((e) => [e.code, e.where.record]), ["JSON_NOT_OBJECT", 2]);
  assert.deepEqual(await jsonError('[{"a":1}, {"a": nope}]', "array").then((e) => [e.code, e.where.record]), ["JSON_INVALID", 2]);
  assert.deepEqual(await jsonError('[{"a":1},]', "array").then((e) => e.code), "JSON_INVALID");
  assert.deepEqual(await jsonError('[{"a":1}', "array").then((e) => e.code), "JSON_INCOMPLETE");
  assert.deepEqual(await jsonError('[{"a":1}] x', "array").then((e) => e.code), "JSON_INVALID");
  assert.deepEqual(await jsonError(`[${deep}]`, "array").then((e) => [e.code, e.where.record]), ["RECORD_TOO_DEEP", 1]);
  assert.deepEqual(await jsonError(`{"a":1}\n\n${deep}\n`, "lines").then((e) => [e.code, e.where.line]), ["RECORD_TOO_DEEP", 3]);
  assert.deepEqual(await jsonError('{"a":1}\n[1]\n', "lines").then((e) => [e.code, e.where.line]), ["JSON_NOT_OBJECT", 2]);
  assert.deepEqual(await jsonError('{"a":1} {"b":2}\n', "lines").then((e) => [e.code, e.where.line]), ["JSON_INVALID", 1]);
  assert.deepEqual(await jsonError('{"a":\n1}\n', "lines").then((e) => [e.code, e.where.line]), ["JSON_INVALID", 1]);
});

test("300 generated CSV documents, split at random: always the same records as the csv-parse reference", async () => {
  const next = seeded(12345);
  for (let doc = 0; doc < 300; doc++) {
    const input = randomCsv(next, { faults: false, rows: 20 });
    const out = await run(new CsvRedactor(csvPlan, new FakeDecisions()), input, randomSplits(doc + 1));
    assert.deepEqual(parse(out, { bom: true }), referenceCsv(input, csvPlan), `document ${doc}: ${JSON.stringify(input.toString())}`);
  }
});

test("JSON: objects on no mapped path are emptied whole, keys and all; inexact numeric ids name no one; repeated keys are refused", async () => {
  const text =
    '{"owner":{"id":"u-all"},"contacts":{"alice@example.com":{"ssn":"123"}},"contact":{"email":"a@x"}}\n{"owner":{"id":12345678901234567890},"contact":{"email":"leak"}}\n';
  const redactor = new JsonRedactor(jsonPlan, new FakeDecisions(), "lines");
  const out = (await run(redactor, Buffer.from(text), whole)).toString();
  assert.equal(out, '{"owner":{"id":null},"contacts":null,"contact":{"email":"a@x"}}\n');
  assert.ok(
    !out.includes("alice") && !Object.keys(redactor.tally().fields).some((path) => path.includes("alice")),
    "no key of an unmapped object in the output or the stats",
  );
  assert.deepEqual(redactor.tally().droppedBy, { NO_USER_ID: 1 });
  assert.deepEqual(await jsonError('{"owner":{"id":"u-all"},"contact":{"email":"a","email":"b"}}\n', "lines").then((e) => [e.code, e.where.line]), [
    "JSON_DUPLICATE_KEY",
    1,
  ]);
});

test("JSON: a numeric id names a user only when written as an integer (parsing rounds 1.0000000000000001 to 1); one field reached two ways is refused", async () => {
  const allowed: RowDecision = { allowed: true, reason: "ALLOWED_BY_TERMS", categories: new Set(["contact", "usage"]) };
  const userOne = {
    prepare: async () => undefined,
    of: (id: string): RowDecision => (id === "1" ? allowed : { allowed: false, reason: "UNKNOWN_USER", categories: new Set() }),
  };
  const text = [
    '{"owner":{"id":1},"contact":{"email":"one@x"}}',
    '{"owner":{"id":1.0000000000000001},"contact":{"email":"rounded@x"}}',
    '{"owner":{"id":1e0},"contact":{"email":"exp@x"}}',
    '{"owner.id":1.5,"contact":{"email":"flat@x"}}',
  ]
    .map((line) => `${line}\n`)
    .join("");
  const redactor = new JsonRedactor(jsonPlan, userOne, "lines");
  const out = (await run(redactor, Buffer.from(text), whole)).toString();
  assert.equal(out, '{"owner":{"id":null},"contact":{"email":"one@x"}}\n', "only the record whose id is written 1");
  assert.deepEqual(redactor.tally().droppedBy, { NO_USER_ID: 3 });
  // The user decided by the dotted key, the nested object another user's: refused as a repeated key is.
  const twice = await jsonError('{"owner.id":"u-all","owner":{"id":"u-none"},"contact":{"email":"u-none@x"}}\n', "lines");
  assert.deepEqual([twice.code, twice.where.line], ["JSON_DUPLICATE_KEY", 1]);
  assert.match(twice.message, /'owner\.id' twice \(as a dotted key and as a nested path\)/);
});

test("CSV: a user id no user could have (over 200 characters, control characters) names no one, as in records and JSON; the next column is not consulted", async () => {
  const tooLong = "u".repeat(201);
  const input = Buffer.from(`id,alt id,email\r\n${tooLong},u-all,a@x\r\n"u-all\u0001",u-all,b@x\r\nu-all,,c@x\r\n`);
  const decisions = new FakeDecisions();
  const redactor = new CsvRedactor(csvPlan, decisions);
  const out = await run(redactor, input, whole);
  assert.equal(out.toString().split("\r\n").filter(Boolean).length, 2, "the header and the one row with a real id");
  assert.deepEqual(redactor.tally().droppedBy, { NO_USER_ID: 2 });
  assert.deepEqual(decisions.prepared, [["u-all"]], "the odd values were never looked up");
});

/** Redacts these records as an NDJSON document: the output and the tally. */
async function redactNdjson(plan: RecordPlan, records: string[], decisions: DecisionSource = new FakeDecisions()) {
  const redactor = new JsonRedactor(plan, decisions, "lines");
  const out = (await run(redactor, Buffer.from(records.map((record) => `${record}\n`).join("")), whole)).toString();
  return { out, tally: redactor.tally() };
}

test("JSON: the user id is found as the record is walked (key 'a.b' then 'id'); a field reached two ways is refused before any user is decided", async () => {
  const nestedIds = planRecords(policy, nestedIdsGroup);
  const decisions = new FakeDecisions();
  const { out, tally } = await redactNdjson(
    nestedIds,
    [
      // Decided under u-none (dropped), whose e-mail it is; not under the author, who may use contact data.
      '{"a.b":{"id":"u-none","email":"u-none-secret@x"},"author":"u-all"}',
      '{"a":{"b.id":"u-none","b.email":"u-none-2@x"},"author":"u-all"}',
      '{"a.b":{"id":"u-contact","email":"c@x"},"author":"u-none"}',
    ],
    decisions,
  );
  assert.equal(out, '{"a.b":{"id":null,"email":"c@x"},"author":null}\n');
  assert.deepEqual(tally.droppedBy, { NO_TERMS_ACCEPTED: 2 });
  assert.deepEqual(decisions.prepared.flat(), ["u-none", "u-none", "u-contact"], "the author was never the user");

  // Refused whatever the user's decision (u-none is dropped), and before it is asked for.
  for (const record of [
    '{"a.b":{"id":"u-none"},"a":{"b":{"id":"u-all","email":"u-all@x"}},"author":"u-all"}',
    '{"author":"u-none","a.b":{"email":"x@x"},"a":{"b":{"email":"y@x"}}}',
  ]) {
    const refusing = new FakeDecisions();
    await assert.rejects(
      run(new JsonRedactor(nestedIds, refusing, "lines"), Buffer.from(`${record}\n`), whole),
      (error: unknown) =>
        error instanceof DocumentError &&
        error.code === "JSON_DUPLICATE_KEY" &&
        error.where.line === 1 &&
        error.message === "the record on line 1 has the field 'a.b' twice (as a dotted key and as a nested path)",
      record,
    );
    assert.deepEqual(refusing.prepared.flat(), [], `${record}: nothing was decided`);
  }

  // Whether a number was written as an integer is read where the walk found it: key "a.b", then "id".
  const userOne = {
    prepare: async () => undefined,
    of: (id: string): RowDecision => (id === "1" ? { allowed: true, reason: "ALLOWED_BY_TERMS", categories: new Set(["contact"]) } : assert.fail(id)),
  };
  const numbers = await redactNdjson(
    nestedIds,
    ['{"a.b":{"id":1,"email":"one@x"}}', '{"a.b":{"id":1.0000000000000001,"email":"rounded@x"}}', '{"author":1,"author":1.0}'],
    userOne,
  );
  assert.equal(numbers.out, '{"a.b":{"id":null,"email":"one@x"}}\n');
  assert.deepEqual(numbers.tally.droppedBy, { NO_USER_ID: 2 }, "of a key written twice, the value JSON.parse keeps (the last) is the one checked");
});

test("JSON: the first user-id value that is not null or '' decides; one that cannot name a user drops the record (NO_USER_ID), the next field unread", async () => {
  const twoIds = planRecords(policy, twoIdsGroup);
  const firsts = ["12345678901234567890", "1.5", "1e0", "true", '{"id":"u-all"}', "[]", '"bad\\u0001id"'];
  const { out, tally } = await redactNdjson(twoIds, [
    ...firsts.map((first) => `{"patient":${first},"author":"u-all","email":"patient-secret@x"}`),
    '{"patient":null,"author":"u-all","email":"a@x"}',
    '{"patient":"","author":"u-all","email":"b@x"}',
  ]);
  assert.equal(
    out,
    '{"patient":null,"author":null,"email":"a@x"}\n{"patient":null,"author":null,"email":"b@x"}\n',
    "only the records whose patient is null or ''",
  );
  assert.deepEqual(tally.droppedBy, { NO_USER_ID: firsts.length });
  assert.ok(!out.includes("patient-secret"));
});
