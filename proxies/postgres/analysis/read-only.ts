import { nodeType, stringValue, walkNodes, type Node } from "./sql-parser";

/** Why a statement may not run through a read-only export: the SQLSTATE and the sentence the client reads. */
export interface Refusal {
  sqlState: string;
  message: string;
}

const howToAllow = "this export is read-only (create it with allowWrites: true to allow writes)";

/** Settings that would turn the read-only guard off or change who the session acts as. */
const guardedSettings = new Set(["transaction_read_only", "default_transaction_read_only", "role", "session_authorization"]);

function refused(what: string, sqlState = "25006"): Refusal {
  return { sqlState, message: `${what} is not allowed: ${howToAllow}` };
}

/**
 * Whether a statement may run through a read-only export. Reads are allowed: SELECT without
 * INTO or row locks, WITH of reads, VALUES, TABLE, cursors, transaction control, SHOW, SET/RESET of
 * ordinary settings, PREPARE/EXECUTE/DEALLOCATE, EXPLAIN without ANALYZE, DISCARD, and COPY TO
 * STDOUT (whose rows the proxy withholds). Everything else, and anything not recognised, is refused.
 * The backend session also starts with default_transaction_read_only=on: a second layer.
 */
export function readOnlyRefusal(statement: Node): Refusal | undefined {
  const typed = nodeType(statement);
  if (!typed) return refused("a statement the export cannot classify");
  const [type, fields] = typed;
  switch (type) {
    case "SelectStmt":
      return selectRefusal(fields);
    case "DeclareCursorStmt":
      return readOnlyRefusal(fields.query as Node);
    case "PrepareStmt":
      return readOnlyRefusal(fields.query as Node);
    case "ExplainStmt": {
      const analyze = ((fields.options as Node[] | undefined) ?? []).some((option) => nodeType(option)?.[1].defname === "analyze");
      if (analyze) return refused("EXPLAIN ANALYZE (it runs the statement)");
      return readOnlyRefusal(fields.query as Node);
    }
    case "FetchStmt":
    case "ClosePortalStmt":
    case "ExecuteStmt":
    case "DeallocateStmt":
    case "VariableShowStmt":
    case "DiscardStmt":
      return undefined;
    case "TransactionStmt":
      return transactionRefusal(fields);
    case "VariableSetStmt":
      return settingRefusal(fields);
    case "CopyStmt":
      if (fields.is_from) return refused("COPY FROM");
      if (fields.filename !== undefined || fields.is_program) return refused("COPY to a server file or program", "42501");
      return fields.query === undefined ? undefined : readOnlyRefusal(fields.query as Node);
    default:
      return refused(describeStatement(type));
  }
}

function selectRefusal(select: Node): Refusal | undefined {
  let refusal: Refusal | undefined;
  const check = (fields: Node) => {
    if (refusal) return;
    if (fields.intoClause) refusal = refused("SELECT INTO (it creates a table)");
    else if (fields.lockingClause) refusal = refused("SELECT ... FOR UPDATE/SHARE (row locks)");
  };
  check(select);
  walkNodes(select, (type, fields) => {
    if (refusal) return;
    if (type === "SelectStmt") check(fields);
    else if (type === "CommonTableExpr" && nodeType(fields.ctequery)?.[0] !== "SelectStmt") refusal = refused("a data-modifying WITH query");
    else if (type === "FuncCall") refusal = functionRefusal(fields);
  });
  return refusal;
}

/**
 * Built-in functions that change something even in a read-only transaction: large objects
 * (PostgreSQL lets lo_create and lo_from_bytea write with transaction_read_only on),
 * notifications, WAL messages, replication slots and origins, other sessions, the server's
 * configuration, logs and statistics, sequences, and extensions that reach other servers or files.
 */
const writingFunctions =
  /^(lo_(creat|create|from_bytea|import|export|unlink|put|truncate|truncate64|open)|lowrite|pg_notify|pg_logical_emit_message|pg_(create|drop|copy)_\w*replication_slot|pg_replication_(origin|slot)_\w+|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile|pg_switch_wal|pg_create_restore_point|pg_stat_reset\w*|pg_backup_(start|stop)|pg_promote|pg_wal_replay_(pause|resume)|pg_import_system_collations|pg_log_backend_memory_contexts|setval|nextval|dblink\w*|pg_file_\w+|pg_logdir_ls)$/;

/**
 * set_config() can turn the read-only guard off for the session's next transactions; some built-ins
 * write regardless. A setting keeps the value it is given for the session's later statements, and
 * some show it whatever they read (a TimeZone abbreviation in every timestamptz a catalog read
 * formats): so its value must be one the client wrote (a constant or a parameter), never one a
 * statement reads from a table.
 */
function functionRefusal(call: Node): Refusal | undefined {
  const name = ((call.funcname as Node[] | undefined) ?? []).map(stringValue);
  const last = name[name.length - 1] ?? "";
  if (writingFunctions.test(last)) return refused(`${last}() (it changes something even in a read-only transaction)`);
  const target = setConfigTarget(call);
  if (!target) return undefined;
  if (target.setting === null) return refused("set_config() with a setting name that is not a constant");
  if (guardedSettings.has(target.setting)) return refused(`set_config('${target.written}', ...)`);
  if (!clientWritten(target.value))
    return refused("set_config() with a value that is not a constant or a parameter (the setting would keep a value read from a table)", "42501");
  return undefined;
}

/** A constant or a bind parameter, cast or not: a value the client wrote. */
function clientWritten(node: Node | undefined): boolean {
  const typed = nodeType(node);
  if (typed?.[0] === "A_Const" || typed?.[0] === "ParamRef") return true;
  return typed?.[0] === "TypeCast" && clientWritten(typed[1].arg as Node | undefined);
}

/**
 * What a set_config() call sets (undefined for any other function): the setting's name as the server matches it (trimmed,
 * lower case) when it is a constant, null when it is not (it could then be any setting), the name as written, and the value.
 */
export function setConfigTarget(call: Node): { setting: string | null; written: string; value: Node | undefined } | undefined {
  const name = ((call.funcname as Node[] | undefined) ?? []).map(stringValue);
  if (name[name.length - 1] !== "set_config") return undefined;
  const args = (call.args as Node[] | undefined) ?? [];
  const written = constantString(args[0]);
  return { setting: written === undefined ? null : written.trim().toLowerCase(), written: written ?? "", value: args[1] };
}

function constantString(node: Node | undefined): string | undefined {
  const typed = nodeType(node);
  if (typed?.[0] !== "A_Const") return undefined;
  const value = typed[1].sval as Node | undefined;
  return value ? String(value.sval ?? "") : undefined;
}

/** READ WRITE (a DefElem `transaction_read_only` whose value is 0) in BEGIN, START TRANSACTION, SET TRANSACTION. */
function asksReadWrite(options: unknown): boolean {
  return ((options as Node[] | undefined) ?? []).some((option) => {
    const element = nodeType(option)?.[1];
    if (element?.defname !== "transaction_read_only") return false;
    const value = nodeType(element.arg)?.[1].ival as Node | undefined;
    return !value?.ival;
  });
}

function transactionRefusal(fields: Node): Refusal | undefined {
  switch (fields.kind) {
    case "TRANS_STMT_BEGIN":
    case "TRANS_STMT_START":
      return asksReadWrite(fields.options) ? refused("a READ WRITE transaction") : undefined;
    case "TRANS_STMT_COMMIT":
    case "TRANS_STMT_ROLLBACK":
    case "TRANS_STMT_SAVEPOINT":
    case "TRANS_STMT_RELEASE":
    case "TRANS_STMT_ROLLBACK_TO":
      return undefined;
    default:
      return refused("two-phase commit");
  }
}

function settingRefusal(fields: Node): Refusal | undefined {
  const name = String(fields.name ?? "").toLowerCase();
  switch (fields.kind) {
    case "VAR_RESET":
    case "VAR_RESET_ALL":
      // Resets go back to the values the session started with, read-only among them.
      return undefined;
    case "VAR_SET_MULTI":
      return asksReadWrite(fields.args) ? refused(`SET ${fields.name} READ WRITE`) : undefined;
    default:
      if (!guardedSettings.has(name)) return undefined;
      if (name.endsWith("read_only") && fields.kind === "VAR_SET_VALUE" && isOn((fields.args as Node[] | undefined)?.[0])) return undefined;
      return refused(
        name === "role" ? "SET ROLE" : name === "session_authorization" ? "SET SESSION AUTHORIZATION" : `SET ${name}`,
        name.endsWith("read_only") ? "25006" : "42501",
      );
  }
}

function isOn(node: Node | undefined): boolean {
  const value = nodeType(node)?.[1];
  if (!value) return false;
  if (value.boolval !== undefined) return Boolean((value.boolval as Node).boolval);
  if (value.ival !== undefined) return Boolean((value.ival as Node).ival);
  const text = String((value.sval as Node | undefined)?.sval ?? "").toLowerCase();
  return ["on", "true", "yes", "1"].includes(text);
}

/** `InsertStmt` -> `INSERT`, `CreateTableAsStmt` -> `CREATE TABLE AS`: how the refusal names the statement. */
function describeStatement(type: string): string {
  const known: Record<string, string> = {
    DoStmt: "DO",
    CallStmt: "CALL",
    ListenStmt: "LISTEN",
    UnlistenStmt: "UNLISTEN",
    NotifyStmt: "NOTIFY",
    LockStmt: "LOCK",
    VacuumStmt: "VACUUM/ANALYZE",
    GrantStmt: "GRANT/REVOKE",
    GrantRoleStmt: "GRANT/REVOKE of roles",
  };
  if (known[type]) return known[type]!;
  return type
    .replace(/Stmt$/, "")
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toUpperCase();
}
