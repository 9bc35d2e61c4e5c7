// The PostgreSQL export's own JavaScript per prepared transaction (issue 18), in process: the real
// session parts (client pump, backend pump, expectation queue, row filter, descriptions, output
// buffers) wired as `ProxySession` wires them, over stub sockets whose write only counts. Each
// transaction is the bytes of pgbench's `-M prepared` select (Bind, Describe portal, Execute, Sync
// from the client; BindComplete, RowDescription, DataRow, CommandComplete, ReadyForQuery from the
// backend), after the statement was prepared and analysed and every user's verdict is loaded.
// The floor is a plain copy of the same bytes each way (what a byte-copying proxy does with them).
// No kernel, no sockets: a live worker's profile is mostly system time, this one is all JavaScript.
// BENCH_TRANSACTIONS (default 300,000) per round, BENCH_ROUNDS (default 5); `--cpu-prof` profiles it.
import type { Socket } from "node:net";
import { encodeBind } from "../protocols/postgres/bind";
import { TargetKind, TransactionStatus } from "../protocols/postgres/codes";
import { encodeCommandComplete } from "../protocols/postgres/command-complete";
import { encodeDataRow } from "../protocols/postgres/data-row";
import { encodeDescribe } from "../protocols/postgres/describe";
import { encodeExecute } from "../protocols/postgres/execute";
import { encodeParse } from "../protocols/postgres/parse";
import { encodeReadyForQuery } from "../protocols/postgres/ready-for-query";
import { encodeRowDescription, type ColumnDescription } from "../protocols/postgres/row-description";
import { encodeSync } from "../protocols/postgres/sync";
import { BackendCode } from "../protocols/postgres/codes";
import { AnalysisCache } from "../proxies/postgres/analysis/analysis-cache";
import { loadSqlParser } from "../proxies/postgres/analysis/sql-parser";
import { CancelKeys } from "../proxies/postgres/cancel-keys";
import { RemoteDecider } from "../proxies/postgres/remote-decider";
import { BackendPump } from "../proxies/postgres/session/backend-pump";
import { ClientPump } from "../proxies/postgres/session/client-pump";
import { Connection } from "../proxies/postgres/session/connection";
import { ExpectationQueue } from "../proxies/postgres/session/expectation-queue";
import { Login } from "../proxies/postgres/session/login";
import { NamedResults } from "../proxies/postgres/session/named-results";
import { ParameterReports } from "../proxies/postgres/session/parameter-reports";
import { RecentStatements } from "../proxies/postgres/session/recent-statements";
import { RowDescriptions } from "../proxies/postgres/session/row-descriptions";
import { RowFilter } from "../proxies/postgres/session/row-filter";
import { SessionCatalog } from "../proxies/postgres/session/session-catalog";
import type { SessionDeps } from "../proxies/postgres/session/session-deps";
import { defaultProxyLimits } from "../proxies/postgres/types";
import { UserIdMemo } from "../proxies/postgres/user-id-memo";
import { VerdictInterner } from "../decision/verdicts";
import type { MappedField, MappingView } from "../exports/row-decider";
import { reportFigure } from "./report";

const transactions = Number(process.env.BENCH_TRANSACTIONS ?? 300_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
/** pgbench's accounts at scale 1 that the export bench uses: every one a user allowed `usage`. */
const accounts = 10_000;
const accountsOid = 16_400;
const statementName = "P_0";
const sql = "SELECT aid, abalance FROM pgbench_accounts WHERE aid = $1";

function returnsItself<T>(this: T): T {
  return this;
}

/** A socket that only counts what is written to it (and never asks the writer to wait). */
class CountingSocket {
  written = 0;
  writes = 0;
  readonly writableNeedDrain = false;
  write(bytes: Buffer | string): boolean {
    this.written += bytes.length;
    this.writes++;
    return true;
  }
  // What the session calls on a socket besides write: nothing to do here.
  readonly pause = returnsItself;
  readonly resume = returnsItself;
  readonly end = returnsItself;
  readonly destroy = returnsItself;
  readonly setNoDelay = returnsItself;
  readonly on = returnsItself;
  asSocket(): Socket {
    return this as unknown as Socket;
  }
}

function mapping(): MappingView {
  const field = (recordField: string, resourceOrder: number): [string, MappedField] => [recordField, { recordField, category: "usage", resourceOrder }];
  return { key: "bench", fields: new Map([field("pgbench_accounts.aid", 0), field("pgbench_accounts.abalance", -1)]) };
}

const column = (name: string, attributeNumber: number, typeOid: number, typeSize: number, tableOid = accountsOid): ColumnDescription => ({
  name,
  tableOid,
  attributeNumber,
  typeOid,
  typeSize,
  typeModifier: -1,
  format: 0,
});
const textColumn = (name: string) => column(name, 0, 25, -1, 0);
const text = (value: string) => Buffer.from(value);
const concat = (...parts: Buffer[]) => Buffer.concat(parts);

/** The backend's answer to the export's catalog query: pgbench_accounts' columns, no shadowed catalog name, the newest relation. */
function catalogAnswer(): Buffer {
  const columns = ["oid", "attnum", "nspname", "relname", "attname", "atttypid"].map(textColumn);
  const rows = [
    ["aid", 1, 23],
    ["bid", 2, 23],
    ["abalance", 3, 23],
    ["filler", 4, 1042],
  ].map(([name, attnum, type]) => encodeDataRow([accountsOid, attnum, "public", "pgbench_accounts", name, type].map((v) => text(String(v)))));
  return concat(
    encodeRowDescription(columns),
    ...rows,
    encodeCommandComplete("SELECT 4"),
    encodeRowDescription([textColumn("kind"), textColumn("name")]),
    encodeCommandComplete("SELECT 0"),
    encodeRowDescription([textColumn("max")]),
    encodeDataRow([text(String(accountsOid))]),
    encodeCommandComplete("SELECT 1"),
    encodeReadyForQuery(TransactionStatus.Idle),
  );
}

/** One transaction's bytes each way for account `aid`. */
function transactionBytes(aid: number): { client: Buffer; backend: Buffer; answer: number } {
  const client = concat(
    encodeBind({ portal: "", statement: statementName, parameterFormats: [], parameters: [text(String(aid))], resultFormats: [0] }),
    encodeDescribe({ kind: TargetKind.Portal, name: "" }),
    encodeExecute({ portal: "", maxRows: 0 }),
    encodeSync(),
  );
  const backend = concat(
    Buffer.from([BackendCode.BindComplete, 0, 0, 0, 4]),
    encodeRowDescription([column("aid", 1, 23, 4), column("abalance", 3, 23, 4)]),
    encodeDataRow([text(String(aid)), text("0")]),
    encodeCommandComplete("SELECT 1"),
    encodeReadyForQuery(TransactionStatus.Idle),
  );
  return { client, backend, answer: backend.length };
}

/** A session's parts as `ProxySession` wires them, logged in, its catalog read and the statement prepared. */
async function readySession() {
  const client = new CountingSocket();
  const backend = new CountingSocket();
  const interner = new VerdictInterner();
  const decider = new RemoteDecider(mapping(), interner, (userIds) =>
    Promise.resolve({
      mapping: mapping(),
      verdicts: userIds.map((userId) => ({ userId, allowed: true, reason: "BENCH", categories: ["usage"], expiresAt: Number.POSITIVE_INFINITY })),
    }),
  );
  const deps: SessionDeps = {
    exportId: "bench",
    connectionId: "bench-connection",
    backend: { host: "127.0.0.1", port: 1 },
    limits: defaultProxyLimits,
    decider,
    audit: () => undefined,
    storedAudit: async () => true,
    cancelKeys: new CancelKeys(),
    cancel: () => undefined,
    userIds: new UserIdMemo(),
    policy: { allowWrites: false, strict: false },
    analyses: new AnalysisCache(),
    onEnd: () => undefined,
  };
  const connection = new Connection(deps, client.asSocket());
  const queue = new ExpectationQueue();
  const catalog = new SessionCatalog(decider, queue, connection);
  const reports = new ParameterReports(connection);
  const named = new NamedResults();
  const recent = new RecentStatements();
  let backendPump: BackendPump | undefined;
  const login = new Login(connection, queue, catalog, reports, {
    attachClient: () => undefined,
    backendReads: () => backendPump!,
    backendClosed: () => undefined,
    ready: () => undefined,
  });
  const rows = new RowFilter(decider, deps.userIds, connection.counts);
  const descriptions = new RowDescriptions(decider, catalog, recent);
  backendPump = new BackendPump(connection, queue, catalog, named, descriptions, rows, reports, login);
  const clientPump = new ClientPump(connection, queue, catalog, named, recent, login);
  connection.whenClosed(() => catalog.close());
  connection.whenClosed(() => login.close());
  connection.backend = backend.asSocket();
  connection.phase = "ready";
  clientPump.sessionReady();

  // The catalog lookup of the first statement, answered as PostgreSQL would.
  const refreshed = catalog.refresh();
  backendPump.received(catalogAnswer());
  await refreshed;
  // pgbench prepares its statement once per connection (the pumps handle a chunk synchronously when nothing must be awaited).
  clientPump.received(concat(encodeParse({ statement: statementName, sql, parameterTypes: [] }), encodeSync()));
  backendPump.received(concat(Buffer.from([BackendCode.ParseComplete, 0, 0, 0, 4]), encodeReadyForQuery(TransactionStatus.Idle)));
  await decider.load(Array.from({ length: accounts }, (_, i) => String(i + 1)));
  if (queue.length !== 0) throw new Error(`the prepare left ${queue.length} answers expected`);
  return { client, backend, connection, clientPump, backendPump };
}

/** CPU µs per transaction of `run` over the workload. */
function measure(run: (tx: ReturnType<typeof transactionBytes>) => void, txs: ReturnType<typeof transactionBytes>[]): number {
  const before = process.cpuUsage();
  for (let i = 0; i < transactions; i++) run(txs[i % txs.length]!);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / transactions;
}

async function main(): Promise<void> {
  await loadSqlParser();
  const txs = Array.from({ length: accounts }, (_, i) => transactionBytes(i + 1));
  const session = await readySession();
  const { client, backend, clientPump, backendPump, connection } = session;
  const readBuffer = backendPump.readBuffer;

  // The export: the client's chunk as the socket hands it over (a new buffer per read), the backend's read into the session's read buffer.
  const exportPath = (tx: ReturnType<typeof transactionBytes>) => {
    clientPump.received(Buffer.from(tx.client));
    tx.backend.copy(readBuffer, 0);
    backendPump.read(tx.backend.length);
  };
  // The floor: each chunk copied once and written on (what a byte-copying proxy does).
  const floorClient = new CountingSocket();
  const floorBackend = new CountingSocket();
  const floorPath = (tx: ReturnType<typeof transactionBytes>) => {
    floorBackend.write(Buffer.from(tx.client));
    floorClient.write(Buffer.from(tx.backend));
  };

  // Warm-up, then a check that the export answered every transaction whole (a run that dropped rows measures nothing).
  const warmUp = Math.min(transactions, 50_000);
  const clientBefore = client.written;
  const keptBefore = connection.counts.rowsKept;
  for (let i = 0; i < warmUp; i++) exportPath(txs[i % txs.length]!);
  for (let i = 0; i < warmUp; i++) floorPath(txs[i % txs.length]!);
  let expected = 0;
  for (let i = 0; i < warmUp; i++) expected += txs[i % txs.length]!.answer;
  if (client.written - clientBefore !== expected || connection.counts.rowsKept - keptBefore !== warmUp)
    throw new Error(
      `the export did not answer every transaction whole: ${client.written - clientBefore} bytes for ${expected}, ${connection.counts.rowsKept - keptBefore} rows kept of ${warmUp}`,
    );
  if (connection.closed) throw new Error("the session closed during the warm-up");

  const exportCosts: number[] = [];
  const floorCosts: number[] = [];
  for (let round = 0; round < rounds; round++) {
    exportCosts.push(measure(exportPath, txs));
    floorCosts.push(measure(floorPath, txs));
  }
  if (connection.closed) throw new Error("the session closed while measuring");
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const writesPerTx = (backend.writes + client.writes) / (warmUp + rounds * transactions);
  console.log(
    `${transactions.toLocaleString("en")} pgbench -M prepared transactions per round, ${rounds} rounds, in process (no sockets); writes per transaction: ${writesPerTx.toFixed(2)}`,
  );
  // The lowest round too: on a machine shared with other work, it is the least disturbed.
  const line = (costs: number[]) =>
    `${costs.map((c) => c.toFixed(2)).join(" / ")} µs CPU per transaction, median ${median(costs).toFixed(2)}, lowest ${Math.min(...costs).toFixed(2)}`;
  console.log(`export session: ${line(exportCosts)}`);
  console.log(`plain copy:     ${line(floorCosts)}`);
  console.log(`the export's own JavaScript: ${(median(exportCosts) - median(floorCosts)).toFixed(2)} µs per transaction`);
  reportFigure({
    figure: "PostgreSQL export session, JavaScript per prepared pgbench transaction (in process, no sockets)",
    measured: `${median(exportCosts).toFixed(2)} µs`,
    baseline: `plain copy ${median(floorCosts).toFixed(2)} µs`,
    ratio: median(exportCosts) / median(floorCosts),
    target: "-",
  });
  connection.close();
}

void main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
