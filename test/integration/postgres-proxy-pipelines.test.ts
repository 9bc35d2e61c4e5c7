// The export proxy alone (no node, no NATS: a decider in memory) in front of a real PostgreSQL,
// driven with extended-protocol pipelines a driver would not send: random sequences of Parse,
// Bind, Describe, Execute (with and without row limits), Close, Flush, Sync and Query over
// statements of the same result type that read mapped and unmapped columns, cursors, COPY TO,
// runtime errors mid-result, split into chunks at random places, with decisions that arrive late.
// Whatever the sequence, no value the purpose does not allow may reach the client, and every batch
// ends as it does against PostgreSQL (no hang, as many ReadyForQuery). This guards the issue 6
// shortcuts: a client's Describe of a portal deciding the Execute right behind it, and the
// backend read buffer reused for every read (the second test: large results through a client that
// stops reading, decisions forgotten midway, every row compared). FUZZ_SEEDS and FUZZ_ROUNDS run more.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PostgresServer } from "../../testkit/postgres";
import { freePort } from "../../testkit/ports";
import { errorsOf, WireClient, type WireMessage } from "../helpers/pg-wire";
import { PostgresExportServer } from "../../proxies/postgres/server";
import { defaultProxyLimits } from "../../proxies/postgres/types";
import type { MappedField, RowDecider, RowVerdict } from "../../exports/row-decider";
import { encodeBind } from "../../protocols/postgres/bind";
import { encodeDescribe } from "../../protocols/postgres/describe";
import { encodeExecute } from "../../protocols/postgres/execute";
import { encodeParse } from "../../protocols/postgres/parse";
import { encodeQuery } from "../../protocols/postgres/query";
import { encodeFlush, encodeSync } from "../../protocols/postgres/sync";
import { encodeCopyData, encodeCopyDone, encodeCopyFail } from "../../protocols/postgres/copy";
import { decodeDataRow, newRowValues } from "../../protocols/postgres/data-row";
import { seededRandom } from "../helpers/seeded-random";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** users.id names the user (no category); users.email is `contact`; users.secret and table `other` map to nothing. */
const allowedContact = ["a1", "a2", "a3"];
const allowedNothing = ["b1"];
const denied = ["d1", "d2", "d3"];
const ids = [...allowedContact, ...allowedNothing, ...denied, "u1"];

function closeMessage(kind: "S" | "P", name: string): Buffer {
  const message = Buffer.concat([Buffer.from([0x43, 0, 0, 0, 0, kind.charCodeAt(0)]), Buffer.from(`${name}\0`)]);
  message.writeInt32BE(message.length - 1, 1);
  return message;
}

/** A decider whose verdicts are in memory only after `load`, which answers late; `forget` empties the memory. */
function lateDecider(): RowDecider & { forget(): void } {
  const contact: RowVerdict = { allowed: true, reason: "T", categories: new Set(["contact"]) };
  const nothing: RowVerdict = { allowed: true, reason: "T", categories: new Set() };
  const no: RowVerdict = { allowed: false, reason: "T", categories: new Set() };
  const field = (recordField: string, category: string | undefined, resourceOrder: number): [string, MappedField] => [
    recordField,
    { recordField, category, resourceOrder },
  ];
  const mapping = {
    key: "m1",
    fields: new Map([
      field("users.id", undefined, 0),
      field("users.email", "contact", -1),
      field("big.id", undefined, 0),
      field("big.email", "contact", -1),
      field("big.n", "contact", -1),
    ]),
  };
  const known = new Map<string, RowVerdict>();
  const decide = (id: string) => (allowedContact.includes(id) ? contact : allowedNothing.includes(id) ? nothing : no);
  return {
    mapping: () => mapping,
    verdict: (id) => known.get(id),
    // Held until `forget`.
    expiresAt: (id) => (known.has(id) ? Number.POSITIVE_INFINITY : undefined),
    load: (users) =>
      new Promise((resolve) =>
        setTimeout(
          () => {
            for (const id of users) known.set(id, decide(id));
            resolve(undefined);
          },
          Math.floor(Math.random() * 5),
        ),
      ),
    forget: () => known.clear(),
  };
}

/** Values the client may receive: allowed ids, allowed users' emails (padded or not), and what the queries compute without data. */
function permitted(value: string): boolean {
  if (ids.includes(value) && !denied.includes(value) && value !== "u1") return true;
  return allowedContact.some((id) => value === `email-${id}` || value === `email-${id}${"x".repeat(3000)}`);
}

describe("PostgreSQL export proxy: adversarial extended-protocol pipelines", () => {
  let pg: PostgresServer;
  let proxy: PostgresExportServer;
  let port: number;
  const decider = lateDecider();

  before(async () => {
    pg = await PostgresServer.start({ hba: ["host all wireuser 127.0.0.1/32 trust"] });
    pg.sql("CREATE DATABASE app");
    pg.sql("CREATE ROLE wireuser LOGIN");
    const rows = [...ids, null].map((id) => `(${id === null ? "NULL" : `'${id}'`}, 'email-${id ?? "nullid"}', 'SECRET-${id ?? "nullid"}')`).join(", ");
    pg.sql(
      [
        "CREATE TABLE users (id text, email text, secret text)",
        `INSERT INTO users VALUES ${rows}`,
        "CREATE TABLE other (id text, email text)",
        `INSERT INTO other SELECT id, 'OTHERMAIL-' || coalesce(id, 'x') FROM users`,
        "CREATE TABLE big (id text, email text, n int)",
        `INSERT INTO big SELECT u.id, 'mail-' || u.id || '-' || g || repeat('z', g % 200), g FROM users u, generate_series(1, 20000) g WHERE u.id IS NOT NULL`,
        "CREATE TABLE sink (id text, n int)",
        "GRANT ALL ON ALL TABLES IN SCHEMA public TO wireuser",
      ].join("; "),
      "app",
    );
    port = await freePort();
    proxy = await PostgresExportServer.listen({
      exportId: "fuzz",
      host: "127.0.0.1",
      port,
      backend: { host: "127.0.0.1", port: pg.port },
      decider,
      audit: () => undefined,
      storedAudit: async () => true,
      limits: defaultProxyLimits,
      policy: { allowWrites: true, strict: false },
    });
  });

  after(async () => {
    await proxy?.close();
    await pg?.stop();
  });

  /** Statements of one result type (text, text): deciding one's rows with another's columns shows. */
  const statements = [
    "SELECT id, email FROM users ORDER BY id",
    "SELECT id, secret FROM users ORDER BY id",
    "SELECT id, email FROM other ORDER BY id",
    "SELECT email, id FROM users ORDER BY id",
    "SELECT u.id, u.secret FROM users u, generate_series(1, 300) ORDER BY 1",
    "SELECT u.id, u.email || repeat('x', 3000) FROM users u, generate_series(1, 20)",
    "SELECT u.id, u.secret || repeat('y', 3000) FROM users u, generate_series(1, 20)",
    "SELECT id, CASE WHEN id = 'd2' THEN (1/0)::text ELSE email END FROM users ORDER BY id",
    "SELECT o.id, u.email FROM other o JOIN users u USING (id) ORDER BY 1",
    "SELECT id, CASE WHEN id LIKE 'd%' THEN (1 / (length(id) - 2))::text ELSE email END FROM users ORDER BY id",
    "SELECT id, secret FROM users WHERE 1 / (length(coalesce(id, 'xx')) - 2) = 0 ORDER BY id DESC",
    "COPY users TO STDOUT",
    "DECLARE c CURSOR WITH HOLD FOR SELECT id, secret FROM users",
    "DECLARE c CURSOR WITH HOLD FOR SELECT id, email FROM users",
    "FETCH 2 FROM c",
    "FETCH ALL FROM c",
    "CLOSE c",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
  ];

  function batch(next: () => number): { messages: Buffer[] } {
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
    const names = ["", "p1"];
    const statementNames = ["", "s1"];
    // Mostly the two statements whose confusion shows: same columns' types, one mapped, one not.
    const sql = () => (next() < 0.6 ? statements[Math.floor(next() * 2)]! : pick(statements));
    const describePortal = (name: string) => encodeDescribe({ kind: 0x50, name });
    const execute = (portal: string) => encodeExecute({ portal, maxRows: pick([0, 0, 0, 1, 2, 3]) });
    const messages: Buffer[] = [];
    const length = 1 + Math.floor(next() * 14);
    for (let i = 0; i < length; i++) {
      const r = next();
      if (r < 0.14) messages.push(encodeParse({ statement: pick(statementNames), sql: sql(), parameterTypes: [] }));
      else if (r < 0.3)
        messages.push(
          encodeBind({ portal: pick(names), statement: pick(statementNames), parameterFormats: [], parameters: [], resultFormats: next() < 0.3 ? [1] : [] }),
        );
      else if (r < 0.4) messages.push(encodeDescribe({ kind: next() < 0.7 ? 0x50 : 0x53, name: pick(names) }));
      else if (r < 0.55) messages.push(execute(pick(names)));
      else if (r < 0.7) messages.push(describePortal(pick(names)), execute(pick(names)));
      else if (r < 0.74) messages.push(closeMessage(next() < 0.5 ? "P" : "S", pick(names)));
      else if (r < 0.8) messages.push(encodeFlush());
      else if (r < 0.87) messages.push(encodeSync());
      else if (r < 0.9) messages.push(encodeQuery(sql()));
      else {
        // A portal bound, described and executed the way libpq does.
        const statement = pick(statementNames);
        const portal = pick(names);
        messages.push(
          encodeParse({ statement, sql: sql(), parameterTypes: [] }),
          encodeBind({ portal, statement, parameterFormats: [], parameters: [], resultFormats: [] }),
          describePortal(portal),
          execute(portal),
        );
      }
    }
    messages.push(encodeSync());
    return { messages };
  }

  function leaks(answer: readonly WireMessage[]): string[] {
    const found: string[] = [];
    for (const m of answer) {
      if (m.code !== "D") {
        const text = m.body.toString("latin1");
        if (/SECRET|OTHERMAIL|email-(d|b|u|null)/.test(text)) found.push(`${m.code}: ${text.slice(0, 80)}`);
        continue;
      }
      const row = decodeDataRow(m.body, 0, m.body.length, newRowValues());
      for (let i = 0; i < row.count; i++) {
        if (row.lengths[i]! < 0) continue;
        const value = m.body.toString("utf8", row.starts[i]!, row.starts[i]! + row.lengths[i]!);
        if (!permitted(value)) found.push(`row value ${value.slice(0, 60)}`);
      }
    }
    return found;
  }

  /** Sends the bytes in chunks cut at random places: messages split across reads, Describe and Execute apart. */
  async function sendChunked(wire: WireClient, bytes: Buffer, next: () => number): Promise<void> {
    let at = 0;
    while (at < bytes.length) {
      const size = next() < 0.5 ? bytes.length - at : 1 + Math.floor(next() * 40);
      wire.socket.write(bytes.subarray(at, at + size));
      at += size;
      if (next() < 0.3) await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  /** The answer up to the marker query's ReadyForQuery (LISTEN: a tag the proxy passes as it is). */
  const marker = encodeQuery("ROLLBACK; LISTEN marker");
  const untilMarker = async (wire: WireClient) => {
    let seenMarker = false;
    return wire.until(
      (m) => {
        if (m.code === "C" && m.body.toString("latin1") === "LISTEN\0") seenMarker = true;
        return seenMarker && m.code === "Z";
      },
      1,
      20_000,
    );
  };

  const seeds = Number(process.env.FUZZ_SEEDS ?? 4);
  const rounds = Number(process.env.FUZZ_ROUNDS ?? 150);
  for (let seed = 1; seed <= seeds; seed++) {
    test(`random pipelines, seed ${seed}: nothing undecided reaches the client, no hang`, async () => {
      const next = seededRandom(seed);
      const wire = await WireClient.connect(port, "wireuser", "app");
      const straight = await WireClient.connect(pg.port, "wireuser", "app");
      try {
        for (let round = 0; round < rounds; round++) {
          if (next() < 0.2) decider.forget();
          const { messages } = batch(next);
          const bytes = Buffer.concat([...messages, marker]);
          straight.send(bytes);
          const direct = await untilMarker(straight);
          await sendChunked(wire, bytes, next);
          const answer = await untilMarker(wire).catch((error: Error) => {
            throw new Error(`seed ${seed} round ${round}: ${error.message}; directly: ${direct.map((m) => m.code).join("")}`);
          });
          assert.ok(
            !wire.closed,
            `seed ${seed} round ${round}: the connection closed: ${answer.map((m) => m.code).join("")} ${answer
              .filter((m) => m.code === "E")
              .map((m) => m.body.toString("latin1"))
              .join(" | ")}`,
          );
          assert.deepEqual(leaks(answer), [], `seed ${seed} round ${round}: ${answer.map((m) => m.code).join("")}`);
          assert.equal(
            answer.filter((m) => m.code === "Z").length,
            direct.filter((m) => m.code === "Z").length,
            `seed ${seed} round ${round}: ReadyForQuery count`,
          );
        }
      } finally {
        wire.close();
        straight.close();
      }
    });
  }

  test("large results through a client that stops reading, with decisions forgotten midway: every row exactly as decided, on several connections at once", async () => {
    const sql = "SELECT id, email, n FROM big ORDER BY n, id";
    const expected: string[] = [];
    for (let n = 1; n <= 20000; n++) {
      for (const id of [...ids].sort()) {
        if (allowedContact.includes(id)) expected.push(`null|mail-${id}-${n}${"z".repeat(n % 200)}|${n}`);
        else if (allowedNothing.includes(id)) expected.push("null|null|null");
      }
    }
    const forgetting = setInterval(() => decider.forget(), 3);
    try {
      await Promise.all(
        [0, 1, 2].map(async (index) => {
          const wire = await WireClient.connect(port, "wireuser", "app");
          try {
            // Alternately not reading and reading: the proxy pauses the backend, its read buffer is read into again meanwhile.
            const pausing = setInterval(() => {
              wire.socket.pause();
              setTimeout(() => wire.socket.resume(), 20);
            }, 40);
            const binary = index === 1;
            if (binary)
              wire.send(
                encodeParse({ statement: "", sql, parameterTypes: [] }),
                encodeBind({ portal: "", statement: "", parameterFormats: [], parameters: [], resultFormats: [1] }),
                encodeDescribe({ kind: 0x50, name: "" }),
                encodeExecute({ portal: "", maxRows: 0 }),
                encodeSync(),
              );
            else if (index === 2)
              wire.send(
                encodeParse({ statement: "", sql, parameterTypes: [] }),
                encodeBind({ portal: "", statement: "", parameterFormats: [], parameters: [], resultFormats: [] }),
                encodeExecute({ portal: "", maxRows: 0 }),
                encodeSync(),
              );
            else wire.send(encodeQuery(sql));
            const answer = await wire.until((m) => m.code === "Z", 1, 120_000);
            clearInterval(pausing);
            const rows = answer
              .filter((m) => m.code === "D")
              .map((m) => {
                const row = decodeDataRow(m.body, 0, m.body.length, newRowValues());
                return Array.from({ length: row.count }, (_, i) =>
                  row.lengths[i]! < 0
                    ? "null"
                    : binary && i === 2
                      ? String(m.body.readInt32BE(row.starts[i]!))
                      : m.body.toString("utf8", row.starts[i]!, row.starts[i]! + row.lengths[i]!),
                ).join("|");
              });
            assert.equal(rows.length, expected.length, `connection ${index}: rows`);
            for (let i = 0; i < rows.length; i++)
              if (rows[i] !== expected[i]) assert.fail(`connection ${index}, row ${i}: ${rows[i]} instead of ${expected[i]}`);
          } finally {
            wire.close();
          }
        }),
      );
    } finally {
      clearInterval(forgetting);
    }
  });

  /** COPY FROM STDIN as clients send it, each step waiting for `until` (`count` times) before the next. */
  interface CopyStep {
    send: Buffer[];
    until: string;
    count?: number;
  }
  const copySql = "COPY sink (id, n) FROM STDIN";
  const goodData = encodeCopyData("x\t1\ny\t2\n");
  const badData = encodeCopyData("x\tnot-a-number\n");
  const extendedCopy = [
    encodeParse({ statement: "", sql: copySql, parameterTypes: [] }),
    encodeBind({ portal: "", statement: "", parameterFormats: [], parameters: [], resultFormats: [] }),
    encodeDescribe({ kind: 0x50, name: "" }),
    encodeExecute({ portal: "", maxRows: 0 }),
  ];
  const copyScenarios: Record<string, CopyStep[]> = {
    "a Sync right behind a simple COPY, before CopyInResponse (ignored by PostgreSQL)": [
      { send: [encodeQuery(copySql), encodeSync()], until: "G" },
      { send: [goodData, encodeCopyDone()], until: "Z" },
    ],
    "libpq's extended COPY (PQexecParams): Sync behind the Execute, another after CopyDone": [
      { send: [...extendedCopy, encodeSync()], until: "G" },
      { send: [goodData, encodeCopyDone(), encodeSync()], until: "Z" },
    ],
    "everything pipelined: the COPY ends before the proxy sees it start": [
      { send: [encodeQuery(copySql), encodeSync(), goodData, encodeCopyDone(), encodeSync()], until: "Z", count: 2 },
    ],
    "two COPYs in one Query, both pipelined": [
      { send: [encodeQuery(`${copySql}; ${copySql}`), goodData, encodeCopyDone(), goodData, encodeCopyDone(), encodeSync()], until: "Z", count: 2 },
    ],
    "CopyFail, then a Sync": [
      { send: [encodeQuery(copySql), encodeSync()], until: "G" },
      { send: [encodeCopyFail("stop"), encodeSync()], until: "Z", count: 2 },
    ],
    "bad copy data in a simple COPY": [
      { send: [encodeQuery(copySql)], until: "G" },
      { send: [badData, encodeCopyDone()], until: "Z" },
    ],
    "bad copy data in an extended COPY, the Sync after CopyDone ending the skipped batch": [
      { send: [...extendedCopy, encodeSync()], until: "G" },
      { send: [badData, encodeCopyDone(), encodeSync()], until: "Z" },
    ],
  };

  /** After each scenario: extended-protocol reads whose bookkeeping shows any answer counted wrong (a Describe-less Execute, a row-limited one). */
  const readBack = [
    encodeParse({ statement: "", sql: "SELECT id, email FROM users ORDER BY id", parameterTypes: [] }),
    encodeBind({ portal: "", statement: "", parameterFormats: [], parameters: [], resultFormats: [] }),
    encodeExecute({ portal: "", maxRows: 0 }),
    encodeBind({ portal: "", statement: "", parameterFormats: [], parameters: [], resultFormats: [] }),
    encodeExecute({ portal: "", maxRows: 2 }),
    encodeSync(),
    marker,
  ];

  async function runCopy(wire: WireClient, steps: readonly CopyStep[]): Promise<WireMessage[]> {
    const answer: WireMessage[] = [];
    for (const step of steps) {
      wire.send(...step.send);
      answer.push(...(await wire.until((m) => m.code === step.until, step.count ?? 1, 10_000)));
    }
    wire.send(...readBack);
    answer.push(...(await untilMarker(wire)));
    return answer;
  }

  /** What must match PostgreSQL's own answer: every message but rows, and the tags of commands that are not reads (COPY n). */
  const shape = (answer: readonly WireMessage[]) =>
    answer
      .filter((m) => m.code !== "D")
      .map((m) => {
        const tag = m.code === "C" ? m.body.toString("latin1", 0, m.body.length - 1) : "";
        return /^(SELECT|FETCH)/.test(tag) || !tag ? m.code : `${m.code} ${tag}`;
      });

  for (const [name, steps] of Object.entries(copyScenarios)) {
    test(`COPY FROM STDIN, ${name}: answered as PostgreSQL answers it, and the connection stays in step`, async () => {
      const straight = await WireClient.connect(pg.port, "wireuser", "app");
      const wire = await WireClient.connect(port, "wireuser", "app");
      try {
        const direct = await runCopy(straight, steps);
        const answer = await runCopy(wire, steps);
        assert.ok(!wire.closed, `the connection closed: ${answer.map((m) => m.code).join("")} ${JSON.stringify(errorsOf(answer))}`);
        assert.deepEqual(shape(answer), shape(direct));
        assert.deepEqual(leaks(answer), []);
        // The reads after the COPY: every allowed user's row (4), then the first 2 of them.
        const rowCount = answer.filter((m) => m.code === "D").length;
        assert.equal(rowCount, 6, `rows after the COPY: ${answer.map((m) => m.code).join("")}`);
      } finally {
        wire.close();
        straight.close();
      }
    });
  }

  test("COPY FROM STDIN: a Sync sent during the COPY is not forwarded (PostgreSQL answers it or not depending on timing); a Query sent during it ends the connection", async () => {
    const wire = await WireClient.connect(port, "wireuser", "app");
    try {
      // The bad data fails the COPY; PostgreSQL may or may not read the Sync before failing it: through the export it never does.
      const answer = await runCopy(wire, [
        { send: [encodeQuery(copySql)], until: "G" },
        { send: [badData, encodeSync(), encodeCopyDone(), encodeSync()], until: "Z", count: 2 },
      ]);
      assert.ok(!wire.closed);
      assert.deepEqual(shape(answer).slice(0, 4), ["G", "E", "Z", "Z"]);
      assert.equal(answer.filter((m) => m.code === "D").length, 6);
      // PostgreSQL fails a COPY on any other message; the export does not guess what the backend did with it.
      wire.send(encodeQuery(copySql));
      await wire.until((m) => m.code === "G", 1, 10_000);
      wire.send(encodeQuery("SELECT id, email FROM users"));
      const ended = await wire.until((m) => m.code === "E", 1, 10_000);
      assert.deepEqual(
        errorsOf(ended).map((e) => e.code),
        ["08P01"],
      );
      await wire.until(() => false, 1, 5000).catch(() => undefined);
      assert.ok(wire.closed, "the connection is closed");
    } finally {
      wire.close();
    }
  });

  test("descriptions remembered per connection stay within their byte bound: 250 distinct 1000-column results do not pile up", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const heap = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const wire = await WireClient.connect(port, "wireuser", "app");
    try {
      const label = "x".repeat(50);
      const before = heap();
      for (let statement = 0; statement < 250; statement++) {
        // Each RowDescription is about 70 KB (1000 columns with 56-character names); all of them remembered would be over 50 MB.
        const columns = Array.from({ length: 1000 }, (_, column) => `${column} AS c${statement}_${column}_${label}`).join(", ");
        wire.send(encodeQuery(`SELECT ${columns}`));
        const answer = await wire.until((m) => m.code === "Z", 1, 10_000);
        assert.equal(answer[0]?.code, "T", `statement ${statement}: ${answer.map((m) => m.code).join("")}`);
      }
      const grown = heap() - before;
      assert.ok(grown < 12 * 1024 * 1024, `the heap grew by ${(grown / 1024 / 1024).toFixed(1)} MB with the connection open`);
    } finally {
      wire.close();
    }
  });
});
