// Issue 27, part 2: policy pushdown. A pushdown export rewrites each mapped table of a SELECT into a
// derived table of the allowed rows with the disallowed values NULL, joined to a verdict table the
// service keeps in the backing database (schema warden). Aggregates, joins, window functions and
// predicates then compute over allowed data only: each query below gives through the export the
// answer it gives directly on a copy that holds only the allowed rows and values. A change to a
// user is in the table before the next statement; clients cannot reach the verdict schema; the
// attacks of the row-by-row suites that leak directly do not leak through a pushdown export.
// Sessions run in proxy worker processes (the default), so the verdict state crosses to them.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "pg";
import { compilePolicy } from "../../decision/compiled-policy";
import type { PolicyConfig } from "../../policy/model";
import type { NatsServerProcess } from "../../service/nats-server";
import { call as request } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { NodeProcess } from "../../testkit/node-process";
import { realisticPolicy } from "../../testkit/policy";
import { freePort } from "../../testkit/ports";
import { PostgresServer } from "../../testkit/postgres";
import { tempDir } from "../../testkit/temp";
import { createPopulation } from "../fixtures/population";
import { createAppDatabase, populationHba, roles, usersRows } from "../fixtures/postgres-population";
import { categoryOf, filtered, forbiddenValues, verdictsOf, type Verdicts } from "../fixtures/postgres-verdicts";
import { selfSignedCertificate } from "../../testkit/certificates";
import { ldapSecurityFile, SlapdServer } from "../../testkit/slapd";

const analyst = { uid: "analyst", password: "analyst-pw" };
const DROPPED = "not-accepted";
const ALLOWED = "accepted";

/** The realistic policy with orders mapped too: user_id decides, item is usage. */
function policyWithOrders(): PolicyConfig {
  const policy = realisticPolicy();
  const group = policy.mappingGroups.find((g) => g.name === "users-table")!;
  group.fieldMappings.push({ recordField: "orders.user_id", resourceContext: true }, { recordField: "orders.item", categoryId: "usage" });
  return policy;
}

type Cell = unknown;

describe("PostgreSQL exports with pushdown: aggregates, joins and predicates over allowed data only", () => {
  let slapd: SlapdServer;
  let pg: PostgresServer;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let ca: Buffer;
  let port: number;
  let allowed: Verdicts;
  const call = (method: string, path: string, body?: unknown) => request(node, method, path, body);

  /** Rows of `sql` through the export (TLS, the analyst's LDAP password) or directly (the reader role); arrays, in order. */
  const run = async (where: "export" | "direct", sql: string): Promise<Cell[][]> => {
    const client =
      where === "export"
        ? new Client({ host: "127.0.0.1", port, user: analyst.uid, password: analyst.password, database: "app", ssl: { ca, rejectUnauthorized: false } })
        : new Client({ host: "127.0.0.1", port: pg.port, user: roles.scram.user, password: roles.scram.password, database: "app" });
    await client.connect();
    try {
      return (await client.query({ text: sql, rowMode: "array" })).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  /** The same statement directly, reading the copy of allowed data. */
  const onCopy = (sql: string) => run("direct", sql.replaceAll(/\b(users|orders)\b/g, "allowed_$1"));

  /**
   * Builds tables allowed_users and allowed_orders: users and orders as the purpose may see them
   * (rows of allowed users, disallowed values NULL). Other names than users and orders: a second
   * relation of the same name would make the mapping's `users.email` ambiguous (it maps neither).
   */
  const buildCopy = (verdicts: Verdicts) => {
    const users = filtered(usersRows() as unknown as Array<Record<string, unknown>>, verdicts, { ...categoryOf, id: undefined, secret: undefined });
    const orders = filtered(
      usersRows()
        .filter((r) => r.id)
        .map((r) => ({ id: r.id, user_id: r.id, item: `item-${r.id}` })),
      verdicts,
      { user_id: undefined, item: "usage", id: undefined },
    );
    const value = (v: unknown) => (v === null || v === undefined ? "NULL" : typeof v === "number" ? String(v) : `'${String(v).replaceAll("'", "''")}'`);
    pg.sql(
      [
        "DROP TABLE IF EXISTS allowed_users, allowed_orders",
        "CREATE TABLE allowed_users (id text, email text, login text, name text, clicks float8, secret text)",
        "CREATE TABLE allowed_orders (id int, user_id text, item text)",
        ...(users.length ? [`INSERT INTO allowed_users VALUES ${users.map((r) => `(${[r.id, r.email, r.login, r.name, r.clicks, r.secret].map(value).join(", ")})`).join(", ")}`] : []),
        ...(orders.length ? [`INSERT INTO allowed_orders VALUES ${orders.map((r) => `(NULL, ${value(r.user_id)}, ${value(r.item)})`).join(", ")}`] : []),
        `GRANT SELECT ON allowed_users, allowed_orders TO ${roles.scram.user}`,
      ].join("; "),
      "app",
    );
  };

  before(async () => {
    const dir = tempDir("pushdown");
    const { certFile } = selfSignedCertificate(dir, "warden");
    ca = readFileSync(certFile);
    slapd = await SlapdServer.start({ suffix: "dc=example,dc=org", users: [analyst] });
    pg = await PostgresServer.start({ hba: populationHba });
    createAppDatabase(pg);
    const orders = usersRows()
      .filter((r) => r.id)
      .map((r) => `('${r.id}', 'item-${r.id}')`)
      .join(", ");
    // The export's identity (reader) may create the schema warden: it keeps the verdict table there.
    pg.sql(`CREATE TABLE orders (id serial PRIMARY KEY, user_id text, item text); INSERT INTO orders (user_id, item) VALUES ${orders}; GRANT ALL ON orders TO ${roles.scram.user}; GRANT CREATE ON DATABASE app TO ${roles.scram.user}`, "app");
    nats = await startNats();
    const security = ldapSecurityFile(dir, slapd, ["postgres"]);
    node = await NodeProcess.start({ nodeId: "pushdown-1", natsUrl: nats.url, env: { SECURITY_CONFIG: security, EXPORT_TLS_CERT_FILE: certFile, EXPORT_TLS_KEY_FILE: join(dir, "warden-key.pem"), EXPORT_WORKERS: "2" } });
    assert.equal((await call("PUT", "/config", policyWithOrders())).status, 200);
    await createPopulation(call);
    const revision = Number((await fetch(`${node.url}/config`)).headers.get("x-config-revision"));
    allowed = await verdictsOf(call, compilePolicy(policyWithOrders(), revision), "service");
    assert.ok(allowed.get(ALLOWED) && !allowed.get(DROPPED), "one allowed and one dropped user at least");
    buildCopy(allowed);
    port = await freePort();
    const created = await call("PUT", "/export", { type: "postgres", endpoint: `127.0.0.1:${pg.port}`, resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" }, port, credentials: { user: roles.scram.user, password: roles.scram.password }, pushdown: true });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const until = Date.now() + 20_000;
    while (!(await run("export", "SELECT 1").then(() => true, () => false))) {
      if (Date.now() > until) throw new Error("the pushdown export did not open");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });

  after(async () => {
    await node?.stop();
    await nats?.stop();
    await pg?.stop();
    await slapd?.stop();
  });

  test("pushdown needs the export's credentials", async () => {
    const refused = await call("PUT", "/export", { type: "postgres", endpoint: `127.0.0.1:${pg.port}`, resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "service" }, pushdown: true });
    assert.equal(refused.status, 400);
    assert.match(JSON.stringify(refused.body), /pushdown needs the export's credentials/);
  });

  test("count, avg, GROUP BY, a window function, a CTE and a join of two mapped tables answer as on a copy of the allowed data", async () => {
    const queries = [
      "SELECT count(*) FROM users",
      "SELECT count(email), count(name), count(login), avg(clicks), sum(clicks) FROM users",
      "SELECT name IS NULL AS hidden, count(*), max(clicks) FROM users GROUP BY 1 ORDER BY 1",
      "SELECT email, row_number() OVER (ORDER BY clicks), rank() OVER (ORDER BY name) FROM users ORDER BY clicks",
      "WITH busy AS (SELECT clicks, email FROM users WHERE clicks > 2) SELECT count(*), sum(clicks), string_agg(email, ',' ORDER BY email) FROM busy",
      "SELECT count(*), count(o.item) FROM users u, orders o",
      "SELECT o.item, u.email FROM orders o JOIN users u ON split_part(o.item, '-', 2) = split_part(u.email, '@', 1) ORDER BY 1",
      "SELECT count(*) FROM users WHERE email LIKE 'not%'",
      "SELECT count(*) FROM users WHERE secret IS NOT NULL",
    ];
    for (const sql of queries) {
      const expected = await onCopy(sql);
      assert.deepEqual(await run("export", sql), expected, sql);
    }
    const [[count]] = (await run("export", "SELECT count(*) FROM users")) as [[string]];
    assert.equal(Number(count), [...allowed.values()].filter(Boolean).length, "counts the allowed users only");
  });

  test("the attacks of the row-by-row suites that leak directly do not leak through a pushdown export", async () => {
    // Users' values, and orders items of users whose usage may not be used.
    const forbidden = [...forbiddenValues(allowed), ...usersRows().flatMap((r) => (r.id && !allowed.get(r.id)?.has("usage") ? [`item-${r.id}`] : []))];
    const attacks = [
      "SELECT a.id, b.email FROM users a, users b",
      `SELECT (SELECT string_agg(email, ',') FROM users) AS everyone`,
      `WITH x AS (SELECT * FROM users) SELECT json_agg(x) FROM x`,
      `SELECT string_agg(item, ',') FROM orders`,
      `SELECT string_agg(secret, ',') FROM users`,
    ];
    for (const sql of attacks) {
      const direct = JSON.stringify(await run("direct", sql));
      assert.ok(forbidden.some((value) => direct.includes(value)), `the attack is real: ${sql}`);
      const exported = JSON.stringify(await run("export", sql));
      assert.deepEqual(
        forbidden.filter((value) => exported.includes(value)),
        [],
        `${sql}: ${exported.slice(0, 200)}`,
      );
    }
    // The inference through WHERE: directly the predicate on the dropped user's email holds; through the export it sees NULL.
    const inference = `SELECT count(*) FROM users WHERE (SELECT email FROM users WHERE id = '${DROPPED}') LIKE 'not%'`;
    assert.notDeepEqual(await run("direct", inference), [["0"]]);
    assert.deepEqual(await run("export", `SELECT count(*) FROM users WHERE (SELECT email FROM users WHERE id = '${DROPPED}') LIKE 'not%'`), [["0"]]);
  });

  test("the verdict schema cannot be read, written or named through the export; directly it holds who may be used", async () => {
    const [[table]] = (await run("direct", "SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 'warden'::regnamespace AND relname LIKE 'verdicts%'")) as [[string]];
    const direct = (await run("direct", `SELECT user_id FROM warden."${table}"`)).flat();
    assert.ok(direct.includes(ALLOWED) && !direct.includes(DROPPED), "directly, the table names who may be used");
    for (const sql of ["SELECT * FROM warden.verdict_versions", "SELECT warden.require_verdicts('x', 0)", "DELETE FROM warden.verdict_versions", "SELECT * FROM users WHERE id IN (SELECT export_id FROM warden.verdict_versions)"]) {
      await assert.rejects(run("export", sql), (error: Error & { code?: string }) => error.code === "42501" || error.code === "25006", sql);
    }
  });

  test("a consent revoked between two statements changes the second answer (an opt-in purpose)", async () => {
    const optInPort = await freePort();
    const created = await call("PUT", "/export", { type: "postgres", endpoint: `127.0.0.1:${pg.port}`, resolverGroup: "users-table", metadata: { type: "platformUse", purposeId: "personalization" }, port: optInPort, credentials: { user: roles.scram.user, password: roles.scram.password }, pushdown: true });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.equal((await call("PUT", "/user/consent", { userId: ALLOWED, consents: { affirmativeConsents: [{ purposeId: "personalization" }] } })).status, 200);
    const client = new Client({ host: "127.0.0.1", port: optInPort, user: analyst.uid, password: analyst.password, database: "app", ssl: { ca, rejectUnauthorized: false } });
    const until = Date.now() + 15_000;
    while (!(await client.connect().then(() => true, () => false))) {
      if (Date.now() > until) throw new Error("the opt-in export did not open");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    try {
      const sql = `SELECT count(*), sum(clicks) FROM users WHERE clicks IS NOT NULL`;
      const before = (await client.query({ text: sql, rowMode: "array" })).rows;
      assert.equal(before[0][0], "1", "only the user who opted in");
      assert.equal((await call("PUT", "/user/consent/revoke", { userId: ALLOWED, purposeId: "personalization" })).status, 200);
      assert.deepEqual((await client.query({ text: sql, rowMode: "array" })).rows, [["0", null]], "the next statement on the same connection");
    } finally {
      await client.end().catch(() => undefined);
    }
  });

  test("a user's change is in the verdict table before the next statement: an erased user's rows are gone at once", async () => {
    const before = await run("export", `SELECT count(*) FROM users WHERE email = '${ALLOWED}@example.com'`);
    assert.deepEqual(before, [["1"]]);
    assert.equal((await call("DELETE", `/user/${ALLOWED}`)).status, 200);
    assert.deepEqual(await run("export", `SELECT count(*) FROM users WHERE email = '${ALLOWED}@example.com'`), [["0"]]);
  });
});
