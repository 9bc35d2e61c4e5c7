// Issue 27, part 1, attacked: statements that passed as catalog reads and were not. Session state
// a row-by-row statement set from a value it may not show (its rows are dropped, its functions
// still run), statement texts of cursors application code opened, and functions of a row that
// attribute notation (`c.name`) calls; a catalog read's Parse or Bind that the backend refused
// because the name was taken (the old statement or cursor stays). Each attack is a sequence of statements on one connection
// through a read-only export; each is shown leaking a forbidden value directly and not through it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { PostgresServer } from "../../testkit/postgres";
import { encodeBind } from "../../protocols/postgres/bind";
import { encodeExecute } from "../../protocols/postgres/execute";
import { encodeParse } from "../../protocols/postgres/parse";
import { encodeQuery } from "../../protocols/postgres/query";
import { encodeSync } from "../../protocols/postgres/sync";
import { WireClient } from "../helpers/pg-wire";
import { CatalogExports, DROPPED, droppedEmail } from "../fixtures/postgres-catalog";
import { roles } from "../fixtures/postgres-population";

describe("PostgreSQL exports: catalog reads do not read back state a statement set from values", () => {
  const world = new CatalogExports();
  let pg: PostgresServer;
  let readOnlyPort: number;
  let forbidden: string[];

  /** Runs the statements in order on one connection; the rows of each (or its error message), as text. */
  const session = async (port: number, statements: readonly string[]): Promise<string[]> => {
    const client = world.client(port);
    await client.connect();
    try {
      const out: string[] = [];
      for (const sql of statements) {
        out.push(
          await client.query({ text: sql, rowMode: "array" }).then(
            (result) => JSON.stringify(result.rows),
            (error: Error) => `error: ${error.message}`,
          ),
        );
      }
      return out;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  /** Sends each batch of messages on one bare protocol connection, waiting for its ReadyForQuery; the text of every answer. */
  const wire = async (port: number, batches: readonly Buffer[][]): Promise<string> => {
    const client = await WireClient.connect(port, roles.trusted.user, "app");
    try {
      let out = "";
      for (const batch of batches) {
        client.send(...batch);
        out += (await client.until((m) => m.code === "Z")).map((m) => m.code + m.body.toString("latin1")).join("");
      }
      return out;
    } finally {
      client.close();
    }
  };
  const catalogRead = "SELECT relname::text AS email FROM pg_catalog.pg_class";
  const bind = (portal: string, statement: string) => encodeBind({ portal, statement, parameterFormats: [], parameters: [], resultFormats: [] });
  const leaked = (text: string) => forbidden.filter((value) => text.includes(value));

  before(async () => {
    // Application code a DBA defined (SECURITY DEFINER, as such functions often are): one opens a
    // cursor over dynamic SQL that embeds a value, one takes any row (anyelement) and reads users;
    // and objects a DBA (or an extension) put into the catalog schemas that read users.
    await world.start("pg-catalog-attacks-1", {
      setupSql: [
        "CREATE FUNCTION public.user_cursor(uid text) RETURNS refcursor LANGUAGE plpgsql SECURITY DEFINER AS $$ DECLARE c refcursor; BEGIN OPEN c FOR EXECUTE format('SELECT %L::text AS email', (SELECT email FROM users WHERE id = uid)); RETURN c; END $$",
        "CREATE FUNCTION public.contacts_of(anyelement) RETURNS text LANGUAGE sql SECURITY DEFINER AS 'SELECT string_agg(email, '','') FROM public.users'",
        "CREATE VIEW information_schema.user_contacts AS SELECT email FROM public.users",
        "GRANT SELECT ON information_schema.user_contacts TO PUBLIC",
        "CREATE FUNCTION pg_catalog.app_contacts() RETURNS text LANGUAGE sql SECURITY DEFINER AS 'SELECT string_agg(email, '','') FROM public.users'",
      ].join("; "),
    });
    ({ pg, readOnlyPort, forbidden } = world);
  });

  after(() => world.stop());

  /** Each attack: what a client on one connection to `port` reads. */
  const attacks: Record<string, (port: number) => Promise<string>> = {
    "advisory locks keyed by each character of a value, found by pg_advisory_unlock": async (port) =>
      (
        await session(port, [
          "SET client_min_messages = error",
          `SELECT pg_advisory_lock(i, ascii(substr(email, i, 1))) FROM users, generate_series(1, 40) i WHERE id = '${DROPPED}' AND i <= length(email)`,
          "SELECT string_agg(pg_catalog.chr(c), '' ORDER BY i) FROM generate_series(1, 40) i, generate_series(32, 126) c WHERE pg_catalog.pg_advisory_unlock(i, c)",
        ])
      ).join("\n"),
    "the random generator seeded with each character of a value (setseed), read by random()": async (port) => {
      // What random() first returns after each seed: the attacker's own table, made on any server.
      const seeds = Array.from({ length: 95 }, (_, i) => i + 32);
      const firsts = await session(
        pg.port,
        seeds.flatMap((code) => [`SELECT setseed(${code} / 256.0)`, "SELECT random()"]),
      );
      const codeOf = new Map(seeds.map((code, i) => [firsts[2 * i + 1]!, code]));
      const positions = Array.from({ length: droppedEmail.length }, (_, i) => i + 1);
      const read = await session(
        port,
        positions.flatMap((i) => [`SELECT setseed(ascii(substr(email, ${i}, 1)) / 256.0) FROM users WHERE id = '${DROPPED}'`, "SELECT pg_catalog.random()"]),
      );
      return positions.map((_, i) => String.fromCharCode(codeOf.get(read[2 * i + 1]!) ?? 63)).join("");
    },
    "TimeZone set to an abbreviation spelling a value (set_config), read by to_char": async (port) =>
      (
        await session(port, [
          `SELECT set_config('TimeZone', '<' || encode(convert_to(email, 'UTF8'), 'hex') || '>0', false) FROM users WHERE id = '${DROPPED}'`,
          "SELECT pg_catalog.convert_from(pg_catalog.decode(pg_catalog.to_char(pg_catalog.now(), 'tz'), 'hex'), 'UTF8')",
        ])
      ).join("\n"),
    "a cursor an application function opened over text that embeds a value, read by pg_cursor()": async (port) =>
      (await session(port, ["BEGIN", `SELECT public.user_cursor('${DROPPED}')`, "SELECT name, statement FROM pg_catalog.pg_cursor()", "COMMIT"])).join("\n"),
    "attribute notation: c.contacts_of calls a function of any row (anyelement) that reads users": async (port) =>
      (
        await session(port, [
          "SELECT c.contacts_of FROM pg_catalog.pg_class c WHERE c.relname = 'pg_class'",
          "SELECT (c).contacts_of FROM pg_catalog.pg_class c WHERE c.relname = 'pg_class'",
        ])
      ).join("\n"),
    "a view a DBA created in information_schema, and a function in pg_catalog, that read users": async (port) =>
      (await session(port, ["SELECT * FROM information_schema.user_contacts", "SELECT pg_catalog.app_contacts()"])).join("\n"),
    "a Parse of a catalog read under the name of a prepared statement over users (refused: the name is taken), then Bind": (port) =>
      wire(port, [
        [encodeParse({ statement: "s1", sql: "SELECT email FROM users", parameterTypes: [] }), encodeSync()],
        [encodeParse({ statement: "s1", sql: catalogRead, parameterTypes: [] }), encodeSync()],
        [bind("", "s1"), encodeExecute({ portal: "", maxRows: 0 }), encodeSync()],
      ]),
    "a Bind of a catalog read under the name of a holdable cursor over users (refused: the name is taken), then Execute": (port) =>
      wire(port, [
        [encodeQuery("DECLARE p CURSOR WITH HOLD FOR SELECT email FROM users")],
        [encodeParse({ statement: "", sql: catalogRead, parameterTypes: [] }), bind("p", ""), encodeSync()],
        [encodeExecute({ portal: "p", maxRows: 0 }), encodeSync()],
      ]),
  };
  for (const [name, attack] of Object.entries(attacks)) {
    test(name, async () => {
      const direct = await attack(pg.port);
      assert.ok(leaked(direct).length > 0, `the attack is real: ${direct.slice(-300)}`);
      const exported = await attack(readOnlyPort);
      assert.deepEqual(leaked(exported), [], exported.slice(-300));
    });
  }
});
