import { Capability, hasCapability } from "../../../protocols/mysql/capabilities";
import { decodeColumnCount, encodeColumnCount } from "../../../protocols/mysql/column-count";
import { decodeColumnDefinition, encodeColumnDefinition, type ColumnDefinition } from "../../../protocols/mysql/column-definition";
import { ColumnFlag } from "../../../protocols/mysql/column-flags";
import { Command, commandName, isReplicationOrAdministrationCommand } from "../../../protocols/mysql/commands";
import { decodeEofPacket, encodeEofPacket, isEofPacket } from "../../../protocols/mysql/eof-packet";
import { decodeErrPacket, encodeErrPacket, isErrPacket } from "../../../protocols/mysql/err-packet";
import { decodeOkPacket, encodeOkPacket, isOkPacket } from "../../../protocols/mysql/ok-packet";
import type { Packet } from "../../../protocols/mysql/packets";
import { decodeQuery, encodeQuery } from "../../../protocols/mysql/query";
import { isResultsetEnd } from "../../../protocols/mysql/resultset-end";
import { responseKind } from "../../../protocols/mysql/response-kind";
import { ServerStatus } from "../../../protocols/mysql/status-flags";
import { decodeStmtPrepareOk, encodeStmtPrepareOk } from "../../../protocols/mysql/stmt-prepare-ok";
import { CursorFlag } from "../../../protocols/mysql/stmt-execute";
import { decodeChangeUser } from "../../../protocols/mysql/change-user";
import { decodeStmtFetch } from "../../../protocols/mysql/statement-commands";
import { decodeTextCommand, encodeTextCommand } from "../../../protocols/mysql/text-commands";
import { planMysqlResult, type MysqlResultPlan } from "../result-plan";
import { sanitizeError } from "../error-texts";
import { missingUserColumns } from "../analysis/hidden-user-columns";
import { resourceContextColumns, strictRefusal } from "../analysis/strict-predicates";
import { RefusalCode, splitStatements, type StatementAnalysis } from "../analysis/statement-analysis";
import type { PacketChannel } from "./packet-channel";
import { BackendCatalog } from "./backend-catalog";
import { RowDecisions } from "./row-decisions";
import { SessionFailure } from "./session-failure";
import { withPreparedOrigins } from "./cursor-origins";
import { makeBackendReadOnly, quoteUnsafeCharacterSet, quoteUnsafeRefusal, readOnlyFailure, relayAuthentication } from "./login";
import type { MysqlSessionCounts, MysqlSessionDeps } from "./session-deps";

/** A prepared statement as the proxy saw it prepared: its text and analysis, and the cursor its last execute opened. */
interface Prepared {
  text: string;
  analysis: StatementAnalysis;
  /** The result's definitions as the server gave them at COM_STMT_PREPARE (session/cursor-origins.ts). */
  columns: ColumnDefinition[];
  /** The head of the last result an execute gave, for the next execute (resultHead). */
  head?: ResultHead;
  /** The plan of the open cursor's rows (from the definitions at COM_STMT_EXECUTE) and the mapping it was made under. */
  cursor?: { plan: MysqlResultPlan; mappingKey: string };
}

/** A result's plan and the packets the client gets for its column count and definitions. */
interface ResultHead {
  /** The backend's definitions the plan was made from. */
  definitions: Buffer[];
  mappingKey: string;
  catalogKey: string;
  database: string | undefined;
  plan: MysqlResultPlan;
  sent: Buffer[];
  diagnostics: number | undefined;
  /** A schema read (metadata-reads.ts): rows pass whole. */
  whole: boolean;
}

function sameBuffers(a: readonly Buffer[], b: readonly Buffer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!a[i]!.equals(b[i]!)) return false;
  return true;
}

/** How many columns the export added to the statement's result (never sent). */
function hiddenCountOf(analysis: StatementAnalysis | undefined): number {
  return analysis?.kind === "select" ? analysis.shape.hiddenCount : 0;
}

/** Commands that run as they are and answer OK or ERR (or, for COM_STATISTICS, one string). */
const simpleCommands = new Set<number>([Command.Ping, Command.InitDb, Command.StmtReset, Command.Statistics]);

/**
 * The command phase: one client command at a time, its answer read whole from the backend
 * before the next command is read. COM_QUERY and COM_STMT_PREPARE texts are analysed (refused
 * ones never reach the backend); every resultset's rows are decided (RowDecisions); OK, EOF and
 * ERR packets are rewritten so that no server text that could quote a value crosses.
 */
/** COM_CHANGE_USER whose audit record was not stored: ER_CON_COUNT_ERROR, as a login refused for the same reason (login.ts). */
const changeUserUnaudited = {
  code: 1040,
  sqlState: "08004",
  message: "the export cannot record this login in its audit log now (the audit log is full or unreachable); connect again later",
};

export class CommandPhase {
  private readonly prepared = new Map<number, Prepared>();
  private readonly rows: RowDecisions;
  private readonly catalog = new BackendCatalog();
  private idleTimer?: NodeJS.Timeout;
  /** Set while a multi-statement's statement other than the last runs: its last OK or EOF tells the client more results follow. */
  private moreResults = false;
  /** Set while waiting for the client's next command: ends the wait when the idle timer fires. */
  private idleWait?: () => void;

  constructor(
    private readonly deps: MysqlSessionDeps,
    private readonly client: PacketChannel,
    private readonly backend: PacketChannel,
    private readonly capabilities: number,
    readonly counts: MysqlSessionCounts,
    /** The session's database (unqualified names are its tables): from the login, then COM_INIT_DB and USE once the server says OK. */
    private database: string | undefined,
    /** Who the session is logged in as (the connection's trace names it): COM_CHANGE_USER changes it. */
    private readonly identity: { user?: string; database?: string },
    /** The client agreed CLIENT_MULTI_STATEMENTS with the proxy. */
    private readonly multiStatements = false,
  ) {
    this.rows = new RowDecisions(deps, client, backend, counts);
  }

  /** Serves commands until the client quits or either side closes. */
  async run(): Promise<void> {
    try {
      for (;;) {
        const command = this.client.tryNext() ?? (await this.nextCommand());
        if (!(await this.handle(command))) return;
      }
    } finally {
      clearTimeout(this.idleTimer);
    }
  }

  /** The client's next command; a client that sends none for the idle timeout is disconnected (its backend connection with it). */
  private nextCommand(): Promise<Packet> {
    const idleMs = this.deps.limits.idleTimeoutMs;
    if (idleMs <= 0) return this.client.next();
    // One timer per session, re-armed at each wait (no timer made and cleared per command).
    if (this.idleTimer) this.idleTimer.refresh();
    else {
      this.idleTimer = setTimeout(() => this.idleWait?.(), idleMs);
      this.idleTimer.unref();
    }
    return new Promise<Packet>((resolve, reject) => {
      this.idleWait = () =>
        // ER_NET_READ_INTERRUPTED, as the server's own wait_timeout.
        reject(
          new SessionFailure("idle timeout", { code: 1159, sqlState: "08S01", message: `the export ended the connection: no command for ${idleMs / 1000} s` }),
        );
      this.client.next().then(
        (packet) => {
          this.idleWait = undefined;
          resolve(packet);
        },
        (error: unknown) => {
          this.idleWait = undefined;
          reject(error);
        },
      );
    });
  }

  /** One command; false when the connection ends. */
  private async handle(command: Packet): Promise<boolean> {
    const payload = command.payload;
    const code = payload[0];
    this.backend.sequence = 0;
    if (code === Command.Quit) return false;
    if (code === Command.Query) {
      const text = decodeQuery(payload, this.capabilities).sql;
      const analysis = this.strict(this.analyse(text));
      if (analysis.kind === "refused" && analysis.multiStatement && this.multiStatements) return this.multiQuery(text);
      if (analysis.kind === "refused") return this.refuse(analysis, text);
      await this.catalogCurrent();
      const run = this.withUserColumns(text, analysis);
      await this.backend.send(run.text === text ? payload : encodeQuery({ sql: run.text, attributes: [] }, this.capabilities));
      await this.results(run.analysis, text);
      return true;
    }
    if (code === Command.StmtPrepare) {
      const text = decodeTextCommand(payload, Command.StmtPrepare);
      const analysis = this.strict(this.analyse(text));
      if (analysis.kind === "refused") return this.refuse(analysis, text);
      await this.catalogCurrent();
      const run = this.withUserColumns(text, analysis);
      await this.backend.send(run.text === text ? payload : encodeTextCommand(Command.StmtPrepare, run.text));
      await this.prepareAnswer(text, run.analysis);
      return true;
    }
    if (code === Command.StmtExecute) return this.execute(payload);
    if (code === Command.StmtFetch) return this.fetch(payload);
    if (code === Command.ResetConnection) return this.resetConnection(payload);
    if (code === Command.ChangeUser) return this.changeUser(payload);
    if (code === Command.StmtClose || code === Command.StmtSendLongData) {
      if (payload.length < 5) return this.refuseCommand(code!, "a malformed statement command");
      if (code === Command.StmtClose) this.prepared.delete(payload.readUInt32LE(1));
      // No answer to either.
      await this.backend.send(payload);
      return true;
    }
    if (code !== undefined && simpleCommands.has(code)) {
      // COM_STMT_RESET closes the statement's cursor.
      if (code === Command.StmtReset && payload.length >= 5) {
        const statement = this.prepared.get(payload.readUInt32LE(1));
        if (statement) delete statement.cursor;
      }
      await this.backend.send(payload);
      const ok = await this.simpleAnswer(code === Command.Statistics);
      if (ok && code === Command.InitDb) this.database = decodeTextCommand(payload, Command.InitDb);
      return true;
    }
    return this.refuseCommand(code ?? -1, "");
  }

  /**
   * A multi-statement COM_QUERY (the client agreed CLIENT_MULTI_STATEMENTS): split by the parser,
   * each statement printed and analysed on its own; if any one is refused the whole text is
   * refused and nothing runs. Then each runs as its own COM_QUERY on the backend (which never
   * agreed to multi-statements, so the server cannot split otherwise than the parser), its
   * results decided with its own analysis, and every result but the last's tells the client more
   * follow. An ERR ends the sequence, as the server's own multi-statements do.
   */
  private async multiQuery(text: string): Promise<boolean> {
    const texts = splitStatements(text);
    if (!texts)
      return this.refuse(
        { ...RefusalCode.parse, kind: "refused", event: "statement.unparsable", message: "the export cannot split this multi-statement" },
        text,
      );
    const analyses = texts.map((statement) => this.strict(this.analyse(statement)));
    for (let i = 0; i < texts.length; i++) {
      const analysis = analyses[i]!;
      if (analysis.kind === "refused") return this.refuse({ ...analysis, message: `statement ${i + 1} of ${texts.length}: ${analysis.message}` }, texts[i]!);
    }
    try {
      for (let i = 0; i < texts.length; i++) {
        await this.catalogCurrent();
        const run = this.withUserColumns(texts[i]!, analyses[i]!);
        this.backend.sequence = 0;
        await this.backend.send(encodeQuery({ sql: run.text, attributes: [] }, this.capabilities));
        this.moreResults = i < texts.length - 1;
        if (!(await this.results(run.analysis, texts[i]!))) return true;
      }
    } finally {
      this.moreResults = false;
    }
    return true;
  }

  /** The catalog of the mapped relations, looked up again when the mapping changed (the backend is idle: between commands). */
  private async catalogCurrent(): Promise<void> {
    const mapping = this.deps.decider.mapping();
    if (this.catalog.key !== mapping.key) await this.catalog.refresh(this.backend, this.capabilities, mapping);
    this.backend.sequence = 0;
  }

  /** Whether the catalog must be looked up again before the next statement (a prepared execute awaits nothing when it need not). */
  private catalogStale(): boolean {
    return this.catalog.key !== this.deps.decider.mapping().key;
  }

  /** Whether the mapping's field applies to a column of (`schema`, `table`), by the catalog looked up for the current mapping. */
  private readonly relationMaps = (recordField: string, schema: string, table: string): boolean =>
    this.catalog.key === this.deps.decider.mapping().key && this.catalog.maps(recordField, schema, table);

  /**
   * What the backend runs for a statement. A SELECT runs as the parser printed it (the analysis'
   * `text`: the server reads what the parser read, never the client's own text); one whose
   * instances' user columns are not all in its select list runs with them added as hidden
   * columns (analysis/hidden-user-columns.ts), so its rows can be decided, or, when the parser
   * cannot print it back with them as the same statement, printed without them (those instances
   * then decide nothing). Schema reads and session settings run printed too (their `text`). Anything else runs as written.
   */
  private withUserColumns(text: string, analysis: StatementAnalysis): { text: string; analysis: StatementAnalysis } {
    if ((analysis.kind === "metadata" || analysis.kind === "other") && analysis.text !== undefined) return { text: analysis.text, analysis };
    if (analysis.kind !== "select") return { text, analysis };
    const hidden = missingUserColumns(analysis.shape, this.deps.decider.mapping(), this.relationMaps, this.database);
    const rewritten = hidden.length > 0 ? this.deps.analyses.rewritten(text, hidden, this.deps.policy) : undefined;
    return rewritten ? { text: rewritten.text, analysis: { ...analysis, shape: rewritten.shape, text: rewritten.text } } : { text: analysis.text, analysis };
  }

  /** A strict export's refusal of a statement that chooses, groups or orders rows by other columns than resource-context ones (with the mapping now). */
  private strict(analysis: StatementAnalysis): StatementAnalysis {
    if (!this.deps.policy.strict || (analysis.kind !== "select" && analysis.kind !== "other")) return analysis;
    return strictRefusal(analysis.predicates, resourceContextColumns(this.deps.decider.mapping())) ?? analysis;
  }

  private analyse(text: string): StatementAnalysis {
    const { analysis, parsed } = this.deps.analyses.get(text, this.deps.policy);
    this.counts.statements++;
    if (parsed) this.counts.statementsParsed++;
    return analysis;
  }

  /** A refused statement: an ERR in MariaDB's terms, audited; nothing reached the backend. */
  private async refuse(analysis: StatementAnalysis & { kind: "refused" }, text: string): Promise<boolean> {
    const { deps } = this;
    this.counts.refused++;
    deps.audit("warn", analysis.event, `export ${deps.exportId} refused a statement: ${analysis.message}`, {
      exportId: deps.exportId,
      connectionId: deps.connectionId,
      component: "mysql",
      code: analysis.code,
      reason: analysis.message,
      statement: text.slice(0, 200),
    });
    await this.client.send(encodeErrPacket({ code: analysis.code, sqlState: analysis.sqlState, message: analysis.message }));
    return true;
  }

  /** A command the export does not run: replication, administration, change of user, cursors... */
  private async refuseCommand(code: number, why: string): Promise<boolean> {
    const { deps } = this;
    const name = commandName(code);
    const reason =
      why ||
      (isReplicationOrAdministrationCommand(code) ? "replication and administration commands are refused by the export" : `${name} is refused by the export`);
    this.counts.refused++;
    deps.audit("warn", "command.refused", `export ${deps.exportId} refused ${name}: ${reason}`, {
      exportId: deps.exportId,
      connectionId: deps.connectionId,
      component: "mysql",
      command: name,
      reason,
    });
    // ER_UNKNOWN_COM_ERROR: clients treat it as "the server does not do this".
    await this.client.send(encodeErrPacket({ code: 1047, sqlState: "08S01", message: reason }));
    return true;
  }

  private async execute(payload: Buffer): Promise<boolean> {
    if (payload.length < 10) return this.refuseCommand(Command.StmtExecute, "a malformed COM_STMT_EXECUTE");
    const prepared = this.prepared.get(payload.readUInt32LE(1));
    if (!prepared) {
      // ER_UNKNOWN_STMT_HANDLER
      await this.client.send(encodeErrPacket({ code: 1243, sqlState: "HY000", message: "unknown prepared statement handler given to EXECUTE" }));
      return true;
    }
    const flags = payload[5];
    if (flags !== CursorFlag.NoCursor && flags !== CursorFlag.ReadOnly)
      return this.refuseCommand(Command.StmtExecute, "only read-only cursors are served by the export (COM_STMT_EXECUTE flags 0 or 1)");
    // A new execute closes the statement's cursor (the server does the same).
    delete prepared.cursor;
    // Checked again with the mapping now: it may have changed since the statement was prepared.
    const strict = this.strict(prepared.analysis);
    if (strict.kind === "refused") return this.refuse(strict, prepared.text);
    if (this.catalogStale()) await this.catalogCurrent();
    this.backend.sequence = 0;
    await this.backend.send(payload);
    await this.results(prepared.analysis, prepared.text, prepared);
    return true;
  }

  /**
   * COM_STMT_FETCH: the next rows of the cursor COM_STMT_EXECUTE opened, decided under the plan
   * made from the definitions the execute answered with (hidden user columns stripped, rows
   * dropped, fields NULLed, as any binary row). A statement without a cursor the proxy saw open,
   * or whose mapping changed since, is answered here and nothing reaches the backend.
   */
  private async fetch(payload: Buffer): Promise<boolean> {
    if (payload.length !== 9) return this.refuseCommand(Command.StmtFetch, "a malformed COM_STMT_FETCH");
    const { statementId } = decodeStmtFetch(payload);
    const prepared = this.prepared.get(statementId);
    // ER_STMT_HAS_NO_OPEN_CURSOR, as the server answers.
    if (!prepared?.cursor) return this.answerError({ code: 1421, sqlState: "HY000", message: `The statement (${statementId}) has no open cursor.` });
    const cursor = prepared.cursor;
    if (cursor.mappingKey !== this.deps.decider.mapping().key) {
      delete prepared.cursor;
      return this.answerError({
        code: 1421,
        sqlState: "HY000",
        message: "the export's mapping changed since the cursor was opened: execute the statement again",
      });
    }
    await this.backend.send(payload);
    const status = await this.decideRows(cursor.plan, true, undefined, prepared.text);
    if (status === undefined || !(status & ServerStatus.CursorExists)) delete prepared.cursor;
    await this.client.flush();
    return true;
  }

  /**
   * COM_RESET_CONNECTION: the server drops the session's prepared statements, variables and
   * transaction, and its read-only setting with them; the proxy forgets the statements and makes
   * the session read-only again before the client's OK. The login (user, database) stays.
   * Anything but OK ends the connection: the session's state would be unknown.
   */
  private async resetConnection(payload: Buffer): Promise<boolean> {
    if (payload.length !== 1) return this.refuseCommand(Command.ResetConnection, "a malformed COM_RESET_CONNECTION");
    await this.backend.send(payload);
    const answer = await this.next();
    this.prepared.clear();
    if (!isOkPacket(answer))
      throw new SessionFailure("reset refused", { code: 1105, sqlState: "HY000", message: "the export ended the connection: the backend did not reset it" });
    await this.readOnlyAgain();
    await this.client.send(this.ok(answer, false));
    return true;
  }

  /**
   * COM_CHANGE_USER in pass-through: a new login with the backend through the proxy, as at
   * connect (the exchange relayed until the backend's OK or ERR). On OK the server has reset the
   * session: the proxy forgets its statements, makes it read-only again, takes the new database,
   * looks the mapped relations up again (the new user may see others), and the connection's
   * trace names the new user. A refused login ends the connection after the backend's error.
   * Where the export verifies logins itself (`mysql` enforced) the command is refused: it would
   * log in past that verification.
   */
  private async changeUser(payload: Buffer): Promise<boolean> {
    const { deps } = this;
    if (deps.verification) return this.refuseCommand(Command.ChangeUser, "COM_CHANGE_USER is refused where the export verifies logins itself: connect again");
    const change = decodeChangeUser(payload, this.capabilities);
    if (change.characterSet !== undefined && quoteUnsafeCharacterSet(change.characterSet)) return this.answerError(quoteUnsafeRefusal);
    // The new login's credentials go to the backend only once the audit log stored it (spec 6 items 4 and 8), as at connect.
    const stored = await deps.storedAudit(
      "info",
      "connection.user-changed",
      `connection ${deps.connectionId} of export ${deps.exportId} logs in again as '${change.username}'`,
      {
        exportId: deps.exportId,
        connectionId: deps.connectionId,
        component: "mysql",
        identity: change.username,
        identitySource: "client",
        previousIdentity: this.identity.user ?? null,
        database: change.database || null,
      },
    );
    if (!stored) throw new SessionFailure("audit unavailable", changeUserUnaudited);
    this.prepared.clear();
    await this.backend.send(payload);
    const answer = await relayAuthentication(deps, this.client, this.backend, change.username);
    this.identity.user = change.username;
    this.database = change.database || undefined;
    if (this.database === undefined) delete this.identity.database;
    else this.identity.database = this.database;
    this.catalog.key = "";
    await this.readOnlyAgain();
    await this.client.send(this.ok(answer, false));
    return true;
  }

  /** After the server reset the session: read-only again (unless the export allows writes), or the connection ends. */
  private async readOnlyAgain(): Promise<void> {
    if (this.deps.policy.allowWrites) return;
    if (!(await makeBackendReadOnly(this.backend))) throw new SessionFailure("read-only failed", readOnlyFailure);
  }

  /** An error answered by the proxy itself (nothing reached the backend). */
  private async answerError(error: { code: number; sqlState: string; message: string }): Promise<boolean> {
    await this.client.send(encodeErrPacket(error));
    return true;
  }

  /** The next backend packet (a promise only when none is here yet). */
  private async next(): Promise<Buffer> {
    return (this.backend.tryNext() ?? (await this.backend.next())).payload;
  }

  /** Relays an OK or ERR (or COM_STATISTICS' string); true for an OK. */
  private async simpleAnswer(statistics: boolean): Promise<boolean> {
    const answer = await this.next();
    if (isErrPacket(answer)) await this.client.send(this.error(answer, undefined));
    else if (isOkPacket(answer)) {
      await this.client.send(this.ok(answer, false));
      return true;
    }
    // COM_STATISTICS answers one string of server counters (uptime, threads, queries): no data.
    else if (statistics) await this.client.send(answer);
    else throw this.outOfStep("an answer that is neither OK nor ERR");
    return false;
  }

  /** COM_STMT_PREPARE's answer: the statement is remembered with its analysis; its definitions pass as they are. */
  private async prepareAnswer(text: string, analysis: StatementAnalysis): Promise<void> {
    const first = await this.next();
    if (isErrPacket(first)) {
      await this.client.send(this.error(first, text));
      return;
    }
    if (first[0] !== 0) throw this.outOfStep("a COM_STMT_PREPARE answer that is neither OK nor ERR");
    const ok = decodeStmtPrepareOk(first, this.capabilities);
    const hidden = hiddenCountOf(analysis);
    if (hidden > 0 && ok.columnCount <= hidden) throw this.outOfStep("a prepared statement without the columns the export added");
    const prepared: Prepared = { text, analysis, columns: [] };
    this.prepared.set(ok.statementId, prepared);
    this.client.push(hidden > 0 ? encodeStmtPrepareOk({ ...ok, columnCount: ok.columnCount - hidden }, this.capabilities) : first);
    const eof = !hasCapability(this.capabilities, Capability.DeprecateEof);
    for (let i = 0; i < ok.parameterCount + (eof && ok.parameterCount > 0 ? 1 : 0); i++) this.client.push(await this.next());
    // The result's definitions, the hidden ones (the last) left out.
    for (let i = 0; i < ok.columnCount; i++) {
      const definition = await this.next();
      prepared.columns.push(decodeColumnDefinition(definition));
      if (i < ok.columnCount - hidden) this.client.push(definition);
    }
    if (eof && ok.columnCount > 0) this.client.push(await this.next());
    await this.client.flush();
  }

  /**
   * The answer to a statement: OK, ERR, or resultsets whose rows are decided. Several results
   * (SERVER_MORE_RESULTS_EXISTS) can only come from server-side code the export did not see:
   * those after the first are decided with no analysis (every row dropped).
   */
  private async results(analysis: StatementAnalysis | undefined, text: string, statement?: Prepared): Promise<boolean> {
    let current = analysis;
    for (;;) {
      const first = await this.next();
      const kind = responseKind(first);
      if (kind === "err") {
        await this.client.send(this.error(first, text));
        return false;
      }
      if (kind === "local-infile") throw this.outOfStep("a LOCAL INFILE request (the export never offers CLIENT_LOCAL_FILES)");
      let status: number;
      if (kind === "ok") {
        status = decodeOkPacket(first, this.capabilities).statusFlags;
        if (current?.kind === "use") this.database = current.db;
        this.client.push(this.ok(first, current?.kind === "other" && current.write));
      } else {
        const end = await this.resultset(first, current, text, statement);
        if (end === undefined) return false;
        status = end;
      }
      await this.client.flush();
      if (!(status & ServerStatus.MoreResultsExist)) return true;
      current = undefined;
      statement = undefined;
    }
  }

  /** One resultset: column definitions checked and planned, rows decided; the end's status, or undefined after an ERR. */
  private async resultset(first: Buffer, analysis: StatementAnalysis | undefined, text: string, statement: Prepared | undefined): Promise<number | undefined> {
    const binary = statement !== undefined;
    const { columnCount } = decodeColumnCount(first, this.capabilities);
    const definitions: Buffer[] = [];
    for (let i = 0; i < columnCount; i++) definitions.push(this.backend.tryNext()?.payload ?? (await this.next()));
    const deprecateEof = hasCapability(this.capabilities, Capability.DeprecateEof);
    const definitionsEnd = deprecateEof ? undefined : await this.next();
    if (definitionsEnd && !isEofPacket(definitionsEnd)) throw this.outOfStep("column definitions not ended by EOF");
    const mapping = this.deps.decider.mapping();
    const { plan, sent, diagnostics, whole } = this.resultHead(first, definitions, analysis, statement, mapping.key);
    for (const payload of sent) this.client.push(payload);
    if (definitionsEnd) this.client.push(definitionsEnd);
    // Without CLIENT_DEPRECATE_EOF a cursor's opening ends at the definitions' EOF (no rows, no second EOF).
    const definitionsStatus = definitionsEnd && definitionsEnd.length >= 5 ? definitionsEnd.readUInt16LE(3) : 0;
    if (statement && definitionsStatus & ServerStatus.CursorExists) {
      statement.cursor = { plan, mappingKey: mapping.key };
      return definitionsStatus;
    }
    const status = await this.decideRows(plan, binary, diagnostics, text, whole);
    // A cursor opened (no rows yet): COM_STMT_FETCH decides its rows under this plan.
    if (statement && status !== undefined && status & ServerStatus.CursorExists) statement.cursor = { plan, mappingKey: mapping.key };
    return status;
  }

  /**
   * A result's plan and what the client gets of its head (column count and definitions, hidden
   * columns left out, always-NULL columns no longer NOT NULL). A prepared statement keeps the
   * last one: an execute whose definitions are byte for byte the last ones, under the same
   * mapping, catalog and database, reuses it (the plan is a function of exactly those and the
   * statement's analysis) instead of decoding and planning every execute again.
   */
  private resultHead(
    first: Buffer,
    definitions: Buffer[],
    analysis: StatementAnalysis | undefined,
    statement: Prepared | undefined,
    mappingKey: string,
  ): ResultHead {
    const cached = statement?.head;
    if (
      cached &&
      cached.mappingKey === mappingKey &&
      cached.catalogKey === this.catalog.key &&
      cached.database === this.database &&
      sameBuffers(cached.definitions, definitions)
    )
      return cached;
    const columns = definitions.map((payload) => decodeColumnDefinition(payload));
    const origins = statement ? withPreparedOrigins(columns, statement.columns) : columns;
    const plan = planMysqlResult(
      origins,
      analysis?.kind === "select" ? analysis.shape : undefined,
      this.deps.decider.mapping(),
      this.relationMaps,
      this.database,
    );
    const hidden = hiddenCountOf(analysis);
    const whole = analysis?.kind === "metadata";
    const columnCount = definitions.length;
    if (hidden > 0 && columnCount <= hidden) throw this.outOfStep("a result without the columns the export added");
    const sent = [hidden > 0 ? encodeColumnCount({ columnCount: columnCount - hidden, metadataFollows: true }, this.capabilities) : first];
    columns.forEach((column, i) => {
      if (plan.hidden[i]) return;
      // A column that is always NULL is not NOT NULL any more.
      const alwaysNull = plan.groupOf[i]! < 0 && analysis?.kind !== "diagnostics" && !whole;
      sent.push(
        alwaysNull && column.flags & ColumnFlag.NotNull ? encodeColumnDefinition({ ...column, flags: column.flags & ~ColumnFlag.NotNull }) : definitions[i]!,
      );
    });
    // SHOW WARNINGS answers Level, Code, Message; anything else is not passed as diagnostics.
    const diagnostics = analysis?.kind === "diagnostics" && columns.map((c) => c.name).join(",") === "Level,Code,Message" ? 2 : undefined;
    if (!statement) return { definitions, mappingKey, catalogKey: this.catalog.key, database: this.database, plan, sent, diagnostics, whole };
    // Kept across executes: copies, not views of the socket's chunks.
    const head: ResultHead = {
      definitions: definitions.map((payload) => Buffer.from(payload)),
      mappingKey,
      catalogKey: this.catalog.key,
      database: this.database,
      plan,
      sent: sent.map((payload) => Buffer.from(payload)),
      diagnostics,
      whole,
    };
    statement.head = head;
    return head;
  }

  /** Rows decided under `plan` up to the resultset's end (its status) or an ERR (undefined). */
  private async decideRows(plan: MysqlResultPlan, binary: boolean, diagnostics: number | undefined, text: string, whole = false): Promise<number | undefined> {
    this.rows.start(plan, binary, diagnostics, whole);
    for (;;) {
      const payload = this.backend.tryNext()?.payload ?? (await this.next());
      if (isResultsetEnd(payload, this.capabilities)) return this.pushEnd(payload);
      if (isErrPacket(payload)) {
        this.client.push(this.error(payload, text));
        await this.client.flush();
        return undefined;
      }
      const waiting = this.rows.row(payload);
      if (waiting) await waiting;
    }
  }

  /** The end of a resultset: an EOF passes (counts and flags only); an OK loses its info, last insert id and affected rows (they could carry a value: LAST_INSERT_ID(expr)). */
  private pushEnd(payload: Buffer): number {
    if (!hasCapability(this.capabilities, Capability.DeprecateEof)) {
      const statusFlags = payload.length >= 5 ? payload.readUInt16LE(3) : 0;
      if (!this.moreResults) this.client.push(payload);
      else {
        const eof = decodeEofPacket(payload, this.capabilities);
        this.client.push(encodeEofPacket({ warnings: eof.warnings, statusFlags: eof.statusFlags | ServerStatus.MoreResultsExist }, this.capabilities));
      }
      return statusFlags;
    }
    const ok = decodeOkPacket(payload, this.capabilities);
    const statusFlags = ok.statusFlags & ~ServerStatus.SessionStateChanged;
    this.client.push(
      encodeOkPacket(
        { header: ok.header, affectedRows: 0, lastInsertId: 0, statusFlags: statusFlags | this.more(), warnings: ok.warnings, info: "" },
        this.capabilities,
      ),
    );
    return statusFlags;
  }

  /**
   * An OK packet as the client may see it: no info text (it is the server's words), no session
   * state; the affected rows and last insert id only for writes (with allowWrites, the one
   * documented channel, as a PostgreSQL export's command tags).
   */
  private ok(payload: Buffer, write: boolean): Buffer {
    const ok = decodeOkPacket(payload, this.capabilities);
    return encodeOkPacket(
      {
        header: ok.header,
        affectedRows: write ? ok.affectedRows : 0,
        lastInsertId: write ? ok.lastInsertId : 0,
        statusFlags: (ok.statusFlags & ~ServerStatus.SessionStateChanged) | this.more(),
        warnings: ok.warnings,
        info: "",
      },
      this.capabilities,
    );
  }

  /** SERVER_MORE_RESULTS_EXISTS while a multi-statement's statement other than the last answers. */
  private more(): number {
    return this.moreResults ? ServerStatus.MoreResultsExist : 0;
  }

  private error(payload: Buffer, statement: string | undefined): Buffer {
    return encodeErrPacket(sanitizeError(decodeErrPacket(payload), statement, this.database));
  }

  private outOfStep(what: string): SessionFailure {
    return new SessionFailure(`backend sent ${what}`, {
      code: 2027,
      sqlState: "08S01",
      message: "the export ended the connection: the backend's answer was not one it can decide",
    });
  }
}
