// Policy pushdown (issue 27), against baselines in the same run:
// 1. A GROUP BY over 1M rows of 10,000 users (half allowed) through a pushdown export vs the same
//    query directly (interleaved rounds, medians). Target >= 0.7x.
// 2. pgbench select-only (-M prepared) through the pushdown export and through a row-by-row
//    export of the same setup (TLS, LDAP-verified clients, the export's credentials), beside PgBouncer.
// 3. What a user change costs a client: a statement through the export right after changing a
//    user (it waits until the verdict table holds the change) vs a statement with no change.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "pg";
import { realisticPolicy } from "../testkit/policy";
import { freePort } from "../testkit/ports";
import { selfSignedCertificate } from "../testkit/certificates";
import { ldapSecurityFile, SlapdServer } from "../testkit/slapd";
import { tempDir } from "../testkit/temp";
import { startBenchNode } from "./http-load";
import { benchRole, pgbench, selectScript, startPgBouncer, startPgbenchDatabase } from "./pgbench";
import { reportFigure } from "./report";

const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const users = Number(process.env.BENCH_USERS ?? 10_000);
const accounts = 10_000;
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const changes = Number(process.env.BENCH_CHANGES ?? 100);
const password = "bench-pw";
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const dir = tempDir("bench-pushdown");
  const { certFile } = selfSignedCertificate(dir, "warden");
  const ca = readFileSync(certFile);
  const slapd = await SlapdServer.start({ suffix: "dc=example,dc=org", users: [{ uid: benchRole, password }] });
  const pg = await startPgbenchDatabase();
  const bouncer = await startPgBouncer(pg.port);
  let node: Awaited<ReturnType<typeof startBenchNode>>["node"] | undefined;
  try {
    pg.sql(
      [
        `CREATE TABLE events AS SELECT 'u' || (i % ${users}) AS uid, (i % 97)::float8 AS amount, 'region-' || (i % 7) AS region, 'note-' || i AS note FROM generate_series(1, ${rows}) AS i`,
        `GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${benchRole}`,
        `GRANT CREATE ON DATABASE app TO ${benchRole}`,
      ].join("; "),
      "app",
    );
    pg.sql("VACUUM ANALYZE", "app");
    const security = ldapSecurityFile(dir, slapd, ["postgres", "export"]);
    Object.assign(process.env, { SECURITY_CONFIG: security, EXPORT_TLS_CERT_FILE: certFile, EXPORT_TLS_KEY_FILE: join(dir, "warden-key.pem") });
    const started = await startBenchNode();
    node = started.node;
    const { base } = started;
    const put = (path: string, body?: unknown) =>
      fetch(`${base}${path}`, {
        method: "PUT",
        ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
      }).then((r) => r.status);
    const policy = realisticPolicy();
    policy.mappingGroups.push(
      {
        name: "events",
        fieldMappings: [
          { recordField: "events.uid", resourceContext: true, categoryId: "usage" },
          { recordField: "events.amount", categoryId: "usage" },
          { recordField: "events.region", categoryId: "usage" },
          { recordField: "events.note", categoryId: "contact" },
        ],
      },
      {
        name: "accounts",
        fieldMappings: [
          { recordField: "pgbench_accounts.aid", resourceContext: true, categoryId: "usage" },
          { recordField: "pgbench_accounts.abalance", categoryId: "usage" },
        ],
      },
    );
    if ((await put("/config", policy)) !== 200) throw new Error("policy not accepted");
    const people = [
      ...Array.from({ length: users }, (_, i) => ({ id: `u${i}`, accept: i % 2 === 0 })),
      ...Array.from({ length: accounts }, (_, i) => ({ id: String(i + 1), accept: true })),
    ];
    for (let i = 0; i < people.length; i += 64) {
      await Promise.all(
        people.slice(i, i + 64).map(async (u) => {
          await put("/user", { userId: u.id, attributes: { dob: "1990-01-01", location: "US" } });
          if (u.accept) await put(`/user/terms?userId=${u.id}`);
        }),
      );
    }
    const exportPort = async (resolverGroup: string, pushdown: boolean) => {
      const port = await freePort();
      // The export API is enforced (it manages an enforced export type): the bench's LDAP user signs in.
      const created = await fetch(`${base}/export`, {
        method: "PUT",
        headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`${benchRole}:${password}`).toString("base64")}` },
        body: JSON.stringify({
          type: "postgres",
          endpoint: `127.0.0.1:${pg.port}`,
          resolverGroup,
          metadata: { type: "platformUse", purposeId: "analytics" },
          port,
          credentials: { user: benchRole, password },
          ...(pushdown ? { pushdown: true } : {}),
        }),
      });
      if (created.status !== 200) throw new Error(`export not created: ${await created.text()}`);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return port;
    };
    const eventsExport = await exportPort("events", true);
    const client = async (port: number) => {
      const c = new Client({
        host: "127.0.0.1",
        port,
        user: benchRole,
        password,
        database: "app",
        ...(port === pg.port ? {} : { ssl: { ca, rejectUnauthorized: false } }),
      });
      await c.connect();
      return c;
    };

    // 1. GROUP BY over 1M rows.
    const groupBy = "SELECT region, count(*), avg(amount), sum(amount) FROM events GROUP BY region ORDER BY region";
    const direct = await client(pg.port);
    const through = await client(eventsExport);
    // The first statement waits for the verdict table's first build (10,000 users decided and written): reported, not in the rounds.
    const buildStarted = process.hrtime.bigint();
    const first = await through.query(groupBy);
    const buildSeconds = Number(process.hrtime.bigint() - buildStarted) / 1e9;
    const allowedRows = first.rows.reduce((sum, row: { count: string }) => sum + Number(row.count), 0);
    if (allowedRows !== rows / 2) throw new Error(`expected the allowed half of the rows through the export, got ${allowedRows}`);
    const times = { direct: [] as number[], export: [] as number[] };
    const timed = async (c: Client) => {
      const startedAt = process.hrtime.bigint();
      await c.query(groupBy);
      return Number(process.hrtime.bigint() - startedAt) / 1e9;
    };
    await timed(direct);
    for (let round = 0; round < rounds; round++) {
      times.direct.push(await timed(direct));
      times.export.push(await timed(through));
    }
    const ratio = median(times.direct) / median(times.export);
    console.log(`GROUP BY over ${rows.toLocaleString("en")} rows of ${users.toLocaleString("en")} users (half allowed), ${rounds} interleaved rounds`);
    console.log(`  first statement through the export (verdict table built: ${users + accounts + 1} users decided and written): ${buildSeconds.toFixed(2)} s`);
    console.log(`  direct  ${times.direct.map((s) => s.toFixed(3)).join(" / ")} s, median ${median(times.direct).toFixed(3)}`);
    console.log(`  export  ${times.export.map((s) => s.toFixed(3)).join(" / ")} s, median ${median(times.export).toFixed(3)}`);
    console.log(`  pushdown export vs direct: ${ratio.toFixed(2)}x (target >= 0.7x)`);
    reportFigure({
      figure: `GROUP BY over ${rows.toLocaleString("en")} rows through a pushdown export vs directly`,
      measured: `${median(times.export).toFixed(3)} s`,
      baseline: `${median(times.direct).toFixed(3)} s`,
      ratio,
      target: ">= 0.7x",
      met: ratio >= 0.7,
    });

    // 3. A user change before a statement.
    const small = "SELECT count(*) FROM events WHERE uid = 'u0'";
    const waits = { changed: [] as number[], unchanged: [] as number[] };
    for (let i = 0; i < changes; i++) {
      let startedAt = process.hrtime.bigint();
      await through.query(small);
      waits.unchanged.push(Number(process.hrtime.bigint() - startedAt) / 1e6);
      startedAt = process.hrtime.bigint();
      if ((await put(`/user/terms?userId=u${(i * 2) % users}`)) !== 200) throw new Error("terms not accepted");
      await through.query(small);
      waits.changed.push(Number(process.hrtime.bigint() - startedAt) / 1e6);
    }
    console.log(
      `\na user's change then a statement (${changes} times, alternating with a statement alone), ms: change + statement median ${median(waits.changed).toFixed(2)}, statement alone median ${median(waits.unchanged).toFixed(2)}`,
    );
    await direct.end();
    await through.end();

    // 2. pgbench select-only through pushdown and row-by-row exports of the same setup, beside PgBouncer.
    const script = selectScript(accounts);
    const rowMode = await exportPort("accounts", false);
    const pushdownAccounts = await exportPort("accounts", true);
    const tls = { PGSSLMODE: "require", PGPASSWORD: password };
    const paths = [
      { name: "pgbouncer", port: bouncer.port, env: {} },
      { name: "row-by-row export", port: rowMode, env: tls },
      { name: "pushdown export", port: pushdownAccounts, env: tls },
    ];
    const run = { seconds, clients: 8, threads: 2, mode: "prepared" as const };
    for (const path of paths) await pgbench(path.port, script, { ...run, seconds: 5, env: path.env });
    const tps = new Map<string, number[]>(paths.map((p) => [p.name, []]));
    for (let round = 0; round < 3; round++) for (const path of paths) tps.get(path.name)!.push(await pgbench(path.port, script, { ...run, env: path.env }));
    console.log(`\npgbench select-only -M prepared, 8 clients, 3 rounds of ${seconds} s per path (exports: TLS, LDAP-verified clients)`);
    for (const path of paths)
      console.log(
        `  ${path.name.padEnd(20)} ${tps
          .get(path.name)!
          .map((t) => t.toFixed(0))
          .join(" / ")} TPS, median ${median(tps.get(path.name)!).toFixed(0)}`,
      );
    const pushdownTps = median(tps.get("pushdown export")!);
    const bouncerTps = median(tps.get("pgbouncer")!);
    console.log(
      `  pushdown vs pgbouncer ${(pushdownTps / bouncerTps).toFixed(2)}x; row-by-row vs pgbouncer ${(median(tps.get("row-by-row export")!) / bouncerTps).toFixed(2)}x`,
    );
    reportFigure({
      figure: "pgbench -M prepared select-only through a pushdown export vs PgBouncer",
      measured: `${pushdownTps.toFixed(0)} TPS`,
      baseline: `${bouncerTps.toFixed(0)} TPS`,
      ratio: pushdownTps / bouncerTps,
      target: "recorded beside row-by-row",
    });
  } finally {
    await node?.stop().catch(() => undefined);
    bouncer.child.kill();
    await pg.stop();
    await slapd.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
