import { randomBytes } from "node:crypto";
import type { scanSync } from "libpg-query";
import { Attribution, baseOf, type Level, type LayoutEntry } from "./attribution";
import { readsOnlyCatalogs } from "./catalog-reads";
import { deparseChecked, pushdownSelect, type PushdownTarget } from "./pushdown";
import { lexerSettingRefusal } from "./lexer-settings";
import { readOnlyRefusal, type Refusal } from "./read-only";
import type { RelationView, SchemaView } from "./schema-view";
import {
  nodeType,
  parseStatements,
  parseWithoutLocations,
  postgresParser,
  SqlSyntaxError,
  stripLocations,
  walkNodes,
  type Node,
  type ParsedStatement,
} from "./sql-parser";
import { strictRefusal } from "./strict-predicates";

export type { Refusal } from "./read-only";

/** How an export treats statements: read-only unless writes are allowed; strict refuses predicates on anything but resource-context columns. */
export interface StatementPolicy {
  allowWrites: boolean;
  strict: boolean;
  /** Policy pushdown (pushdown.ts): every SELECT reads mapped tables through derived tables of allowed data. */
  pushdown?: PushdownTarget;
}

/** One column of a result as the analysis expects it. */
export interface ShapeColumn {
  /** Set on a hidden column (its name): stripped before the client sees the row. */
  hidden?: string;
  /** The instance group that decides this value; -1: none (emptied). */
  group: number;
  /** The relation and column the value must come from (checked against the RowDescription and the catalog). */
  expect?: { relation: RelationView; column: string };
}

/** The rows a statement returns: its columns position by position (gaps: runs of unknown length), and its instance groups. */
export interface ResultShape {
  /** The same for shapes alike (statements that differ only in constants): plans are remembered under it. */
  key: string;
  entries: Array<{ kind: "gap" } | { kind: "column"; column: ShapeColumn }>;
  /** Per group: the entries that hold its resource-context values, in mapping order. */
  groups: Array<{ relation: RelationView; subjects: number[] }>;
  /** How many entries are hidden columns. */
  hiddenCount: number;
  /** Hidden column names start with this (random per analysis). */
  hiddenPrefix: string;
  /** The statement reads only the system catalogs (catalog-reads.ts): its rows pass as they are. */
  catalog?: true;
  /** The statement was rewritten for pushdown (pushdown.ts): its rows are allowed data and pass as they are. */
  pushdown?: true;
}

/** Whether a result's rows pass as the backend sends them (their statement reads only what may cross). */
export function passesWhole(shape: ResultShape | undefined): boolean {
  return shape?.catalog === true || shape?.pushdown === true;
}

/** What a statement does, as far as the proxy's bookkeeping cares. */
export type StatementEffect =
  | { kind: "rows"; shape: ResultShape | undefined }
  /** `hold`: WITH HOLD (it outlives its transaction if that commits). */
  | { kind: "declare"; cursor: string; shape: ResultShape | undefined; hold: boolean }
  | { kind: "prepare"; name: string; shape: ResultShape | undefined }
  | { kind: "fetch"; cursor: string }
  | { kind: "execute"; name: string }
  | { kind: "close"; cursor: string | undefined }
  | { kind: "deallocate"; name: string | undefined }
  /** DISCARD ALL: every prepared statement and cursor is gone. */
  | { kind: "discard" }
  /** Transaction control, SET, SHOW: runs no code of the database's. */
  | { kind: "control" }
  | { kind: "other" };

export interface QueryAnalysis {
  /** Set when the text may not run: nothing of it is sent. */
  refusal?: Refusal & { position?: number };
  /** The text to send (the client's, with hidden columns spliced in where needed). */
  text: string;
  statements: StatementEffect[];
  /** Where text was inserted (character positions in `text`; `replaced`: characters of the client's text it stands for), to map error positions back to the client's text. */
  insertions: Array<{ at: number; length: number; replaced?: number }>;
  /** Identifiers and names the client wrote: labels made of these may cross (found when first asked). */
  identifiers(): ReadonlySet<string>;
  /** Hidden column names of this text start with this (also withheld from error messages). */
  hiddenPrefix: string;
}

export const reservedPrefix = "__warden";
/**
 * Hidden column names: a random prefix per process, never shown to clients (removed from
 * RowDescriptions and error texts), so no relation or function can carry one by chance or
 * design; then a number per statement, so statements alike get the same names (and plans).
 */
const hiddenPrefix = `${reservedPrefix}_${randomBytes(6).toString("hex")}_`;

/** The shape of every statement that reads only the system catalogs. */
const catalogShape: ResultShape = { key: "catalog", entries: [], groups: [], hiddenCount: 0, hiddenPrefix, catalog: true };
/** The shape of every statement rewritten for pushdown. */
const pushdownShape: ResultShape = { key: "pushdown", entries: [], groups: [], hiddenCount: 0, hiddenPrefix, pushdown: true };

/** The SELECT a statement runs and shows rows of (its own, a cursor's or a prepared statement's). */
function selectOf(node: Node): Node | undefined {
  const typed = nodeType(node);
  if (!typed) return undefined;
  if (typed[0] === "SelectStmt") return node;
  if (typed[0] === "DeclareCursorStmt" || typed[0] === "PrepareStmt")
    return nodeType(typed[1].query)?.[0] === "SelectStmt" ? (typed[1].query as Node) : undefined;
  return undefined;
}

/**
 * A text of a pushdown export: every SELECT reads only the catalogs (it passes as it is), or is
 * rewritten (its statement deparsed and read back, then put in place of the client's), or the
 * text is refused. Other statements (writes, when allowed) run as the client wrote them.
 */
function analyzePushdown(
  sql: string,
  parsed: ParsedStatement[],
  schema: SchemaView,
  target: PushdownTarget,
  identifiers: () => ReadonlySet<string>,
): QueryAnalysis {
  const base = { text: sql, statements: [], insertions: [], identifiers, hiddenPrefix };
  const rewritten = new Set<Node>();
  const bytes = Buffer.from(sql, "utf8");
  const parts: Buffer[] = [];
  const insertions: QueryAnalysis["insertions"] = [];
  let copied = 0;
  let shift = 0;
  for (const statement of parsed) {
    const select = selectOf(statement.node);
    if (!select) continue;
    const result = pushdownSelect(select, schema, target);
    if (result.kind === "catalog") continue;
    if (result.kind === "refused") return { ...base, refusal: { sqlState: "42501", message: result.message } };
    const text = deparseChecked(statement.node);
    if (text === undefined)
      return { ...base, refusal: { sqlState: "0A000", message: "with pushdown, the export could not rewrite this statement exactly; write it more simply" } };
    rewritten.add(select);
    parts.push(bytes.subarray(copied, statement.start));
    const at = bytes.subarray(0, statement.start).toString("utf8").length + shift;
    const replaced = bytes.subarray(statement.start, statement.end).toString("utf8").length;
    insertions.push({ at, length: text.length, replaced });
    shift += text.length - replaced;
    parts.push(Buffer.from(text, "utf8"));
    copied = statement.end;
  }
  parts.push(bytes.subarray(copied));
  const shapeOf = (select: Node | undefined) => () =>
    select && rewritten.has(select) ? pushdownShape : nodeType(select)?.[0] === "SelectStmt" ? catalogShape : undefined;
  const statements = parsed.map((statement) => effectOf(statement.node, shapeOf)(false));
  return { text: insertions.length > 0 ? Buffer.concat(parts).toString("utf8") : sql, statements, insertions, identifiers, hiddenPrefix };
}

/** Labels PostgreSQL gives expressions from keywords (FigureColname), which no identifier node spells. */
const keywordLabels = [
  "?column?",
  "case",
  "row",
  "array",
  "exists",
  "coalesce",
  "greatest",
  "least",
  "nullif",
  "xmlconcat",
  "xmlelement",
  "xmlexists",
  "xmlforest",
  "xmlparse",
  "xmlpi",
  "xmlroot",
  "xmlserialize",
  "xmltable",
  "current_date",
  "current_time",
  "current_timestamp",
  "localtime",
  "localtimestamp",
  "current_role",
  "current_user",
  "user",
  "session_user",
  "current_catalog",
  "current_schema",
  "system_user",
  "grouping",
  "json_object",
  "json_array",
  "json_objectagg",
  "json_arrayagg",
  "json",
  "json_scalar",
  "json_serialize",
  "json_query",
  "json_value",
  "json_exists",
  "merge_action",
  "position",
  "substring",
  "overlay",
  "trim",
  "extract",
  "collation for",
  "normalize",
  "interval",
  "bool",
  "int4",
  "numeric",
  "text",
  "varchar",
  "bpchar",
  "float4",
  "float8",
  "int2",
  "int8",
  "timestamp",
  "timestamptz",
  "time",
  "timetz",
  "date",
  "bit",
  "varbit",
];

/**
 * Analyses one client text (a Query's, or a Parse's statement): parses it with PostgreSQL's
 * parser, refuses what the export's policy does not allow, attributes each output column to
 * its table instance and splices in the hidden resource-context columns. Pure: the same text,
 * schema and policy give the same analysis (the hidden prefix aside), so results are cached.
 */
export function analyzeQuery(sql: string, schema: SchemaView, policy: StatementPolicy): QueryAnalysis {
  const base = { text: sql, statements: [], insertions: [], identifiers: () => keywordLabelSet, hiddenPrefix };
  let parsed: ParsedStatement[];
  try {
    parsed = parseStatements(sql);
  } catch (error) {
    if (!(error instanceof SqlSyntaxError)) throw error;
    return { ...base, refusal: { sqlState: "42601", message: error.message, position: error.position || undefined } };
  }
  let names: Set<string> | undefined;
  // Found when first asked, from the text (a cached analysis keeps no parse tree).
  const identifiers = () => (names ??= namesWritten(sql));
  // A name is in the text as written (unquoted ones folded to lower case), or spelled with U& escapes.
  const lower = sql.toLowerCase();
  if (lower.includes(reservedPrefix) || lower.includes("u&")) {
    for (const name of identifiersOf(parsed)) {
      if (name.toLowerCase().startsWith(reservedPrefix))
        return { ...base, identifiers, refusal: { sqlState: "42501", message: `names starting with ${reservedPrefix} are reserved by the export` } };
    }
  }
  for (const statement of parsed) {
    const refusal =
      lexerSettingRefusal(statement.node) ??
      (policy.allowWrites ? undefined : readOnlyRefusal(statement.node)) ??
      (policy.strict ? strictRefusal(statement.node, schema) : undefined);
    if (refusal) return { ...base, identifiers, refusal };
  }
  if (policy.pushdown) return analyzePushdown(sql, parsed, schema, policy.pushdown, identifiers);

  const attribution = new Attribution(schema, hiddenPrefix);
  const shaped: Array<{ level: Level; plan: GroupPlan }> = [];
  const shapeOf = (select: Node | undefined): (() => ResultShape | undefined) => {
    const fields = nodeType(select);
    if (fields?.[0] !== "SelectStmt") return () => undefined;
    if (readsOnlyCatalogs(fields[1], schema.shadows)) return () => catalogShape;
    const level = attribution.level(fields[1], undefined, undefined);
    const plan = planGroups(attribution, level);
    shaped.push({ level, plan });
    return () => finishShape(attribution, level, plan, hiddenPrefix);
  };
  const pending = parsed.map((statement) => effectOf(statement.node, shapeOf));

  const levels = collectLevels(shaped.map((s) => s.level)).filter((level) => level.hidden.length > 0);
  let text = sql;
  let insertions: QueryAnalysis["insertions"] = [];
  if (levels.length > 0) {
    const spliced = splice(sql, levels);
    if (spliced) ({ text, insertions } = spliced);
    // The splice did not read back as intended: no hidden columns, so no value is attributed (emptied).
    else for (const { level } of shaped) clearHidden(level);
  }
  const statements = pending.map((finish) => finish(levels.length > 0 && text === sql));
  return { text, statements, insertions, identifiers, hiddenPrefix };
}

type PendingEffect = (unattributed: boolean) => StatementEffect;

function effectOf(node: Node, shapeOf: (select: Node | undefined) => () => ResultShape | undefined): PendingEffect {
  const typed = nodeType(node);
  if (!typed) return () => ({ kind: "other" });
  const [type, fields] = typed;
  const shaped = (select: unknown) => {
    const finish = shapeOf(select as Node);
    return (unattributed: boolean) => (unattributed ? undefined : finish());
  };
  switch (type) {
    case "SelectStmt": {
      const shape = shaped(node);
      return (u) => ({ kind: "rows", shape: shape(u) });
    }
    case "DeclareCursorStmt": {
      const shape = shaped(fields.query);
      // CURSOR_OPT_HOLD (PostgreSQL's parsenodes.h).
      const hold = (Number(fields.options ?? 0) & 0x20) !== 0;
      return (u) => ({ kind: "declare", cursor: String(fields.portalname ?? ""), shape: shape(u), hold });
    }
    case "PrepareStmt": {
      const shape = shaped(fields.query);
      return (u) => ({ kind: "prepare", name: String(fields.name ?? ""), shape: shape(u) });
    }
    case "FetchStmt":
      return () => (fields.ismove ? { kind: "other" } : { kind: "fetch", cursor: String(fields.portalname ?? "") });
    case "ExecuteStmt":
      return () => ({ kind: "execute", name: String(fields.name ?? "") });
    case "ClosePortalStmt":
      return () => ({ kind: "close", cursor: fields.portalname as string | undefined });
    case "DeallocateStmt":
      return () => ({ kind: "deallocate", name: fields.isall ? undefined : (fields.name as string | undefined) });
    case "DiscardStmt":
      return () => (fields.target === "DISCARD_ALL" ? { kind: "discard" } : { kind: "other" });
    case "TransactionStmt":
    case "VariableSetStmt":
    case "VariableShowStmt":
      return () => ({ kind: "control" });
    default:
      return () => ({ kind: "other" });
  }
}

/** The instance groups of a result: one per instance whose values reach it, with where its resource-context values will be. */
interface GroupPlan {
  groups: Array<{ key: string; relation: RelationView; hidden: Array<string | undefined> }>;
}

function planGroups(attribution: Attribution, level: Level): GroupPlan {
  const plan: GroupPlan = { groups: [] };
  const layout = attribution.layout(level);
  const columns = layout.flatMap((entry) => (entry.kind === "column" ? [entry.column] : []));
  for (const column of columns) {
    if (!column.origin) continue;
    const base = baseOf(attribution, column.origin);
    if (!base || plan.groups.some((g) => g.key === base.key)) continue;
    const { relation } = base;
    // Resource-context columns the result already shows (the same instance's, through the same subqueries) need no hidden copy.
    const shown = relation.subjectColumns.map((subject) =>
      columns.some((c) => c.origin && baseOf(attribution, c.origin)?.key === base.key && baseOf(attribution, c.origin)?.column === subject),
    );
    let hidden: Array<string | undefined> = relation.subjectColumns.map(() => undefined);
    if (shown.some((s) => !s)) {
      const expressions = attribution.subjectExpressions(level, column.origin);
      if (!expressions) continue;
      hidden = expressions.map((expression, i) => (shown[i] ? undefined : attribution.hiddenColumn(level, expression)));
    }
    plan.groups.push({ key: base.key, relation, hidden });
  }
  return plan;
}

/** The result's shape once every hidden column is in place (the layout of `*` over subqueries includes theirs). */
function finishShape(attribution: Attribution, level: Level, plan: GroupPlan, hiddenPrefix: string): ResultShape {
  const layout: LayoutEntry[] = attribution.layout(level);
  const bases = layout.map((entry) => (entry.kind === "column" && entry.column.origin ? baseOf(attribution, entry.column.origin) : undefined));
  const entries: ResultShape["entries"] = layout.map((entry, index) => {
    if (entry.kind === "gap") return entry;
    const base = bases[index];
    const group = base ? plan.groups.findIndex((g) => g.key === base.key) : -1;
    return {
      kind: "column",
      column: { hidden: entry.column.hidden, group, expect: base && group >= 0 ? { relation: base.relation, column: base.column } : undefined },
    };
  });
  const groups = plan.groups.map((group) => ({
    relation: group.relation,
    subjects: group.relation.subjectColumns.map((subject, i) => {
      const hidden = group.hidden[i];
      if (hidden !== undefined) return layout.findIndex((entry) => entry.kind === "column" && entry.column.hidden === hidden);
      return bases.findIndex((base) => base?.key === group.key && base.column === subject);
    }),
  }));
  const key = JSON.stringify([
    entries.map((e) =>
      e.kind === "gap"
        ? 0
        : [
            e.column.hidden ?? "",
            e.column.group,
            e.column.expect ? [e.column.expect.relation.schema, e.column.expect.relation.name, e.column.expect.column] : 0,
          ],
    ),
    groups.map((g) => [g.relation.schema, g.relation.name, g.subjects]),
  ]);
  const hiddenCount = entries.filter((e) => e.kind === "column" && e.column.hidden).length;
  return { key, entries, groups, hiddenCount, hiddenPrefix };
}

function collectLevels(roots: Level[]): Level[] {
  const seen = new Set<Level>();
  const visit = (level: Level) => {
    if (seen.has(level)) return;
    seen.add(level);
    for (const cte of level.ctes.values()) if (cte.level) visit(cte.level);
    if (level.left) visit(level.left);
    const items = [...level.items];
    while (items.length > 0) {
      const item = items.pop()!;
      if (item.kind === "derived") visit(item.sub);
      if (item.kind === "join") items.push(item.left, item.right);
    }
  };
  roots.forEach(visit);
  return [...seen];
}

function clearHidden(level: Level): void {
  for (const found of collectLevels([level])) found.hidden.length = 0;
}

/** Clause keywords that end a target list (at its own parenthesis depth). */
const targetListEnd = new Set([
  "FROM",
  "INTO",
  "WHERE",
  "GROUP",
  "HAVING",
  "WINDOW",
  "ORDER",
  "LIMIT",
  "OFFSET",
  "FETCH",
  "FOR",
  "UNION",
  "INTERSECT",
  "EXCEPT",
  "ON",
  "RETURNING",
]);
/** Keywords after which one of those is part of an expression: IS DISTINCT FROM, WITHIN GROUP, COLLATION FOR. */
const expressionPairs: Record<string, string> = { FROM: "DISTINCT", GROUP: "WITHIN", FOR: "COLLATION" };

/**
 * Appends each level's hidden columns after its last target, found with PostgreSQL's own
 * scanner; then parses the result and accepts it only if it reads as the original statements
 * with exactly those columns added. Undefined when it does not.
 */
function splice(sql: string, levels: Level[]): { text: string; insertions: QueryAnalysis["insertions"] } | undefined {
  const bytes = Buffer.from(sql, "utf8");
  const tokens = postgresParser().scanSync(sql).tokens;
  const edits: Array<{ at: number; text: string }> = [];
  for (const level of levels) {
    const targets = (level.select.targetList as Node[] | undefined) ?? [];
    const last = nodeType(targets[targets.length - 1])?.[1];
    if (!last || typeof last.location !== "number") return undefined;
    const at = targetListEndAt(tokens, last.location);
    if (at === undefined) return undefined;
    edits.push({ at, text: level.hidden.map((h) => `, ${h.expression} AS "${h.name}"`).join("") });
  }
  edits.sort((a, b) => a.at - b.at);
  const parts: Buffer[] = [];
  let from = 0;
  for (const edit of edits) {
    parts.push(bytes.subarray(from, edit.at), Buffer.from(edit.text, "utf8"));
    from = edit.at;
  }
  parts.push(bytes.subarray(from));
  const text = Buffer.concat(parts).toString("utf8");

  // What the splice must read as: the original trees with each level's hidden targets appended.
  const original = parseStatements(sql);
  const expected = withHiddenTargets(original, levels);
  let actual: unknown;
  try {
    actual = parseWithoutLocations(text);
  } catch {
    return undefined;
  }
  if (JSON.stringify(actual) !== JSON.stringify(expected)) return undefined;

  let shift = 0;
  const insertions = edits.map((edit) => {
    const at = characters(bytes.subarray(0, edit.at)) + shift;
    const length = [...edit.text].length;
    shift += length;
    return { at, length };
  });
  return { text, insertions };
}

/** The trees of `statements` (parsed again: the levels point into other copies) with the hidden targets added, without locations. */
function withHiddenTargets(statements: ParsedStatement[], levels: Level[]): unknown[] {
  const added = new Map<string, Node[]>();
  for (const level of levels)
    added.set(
      signature(level.select),
      level.hidden.map((h) => hiddenTarget(h.expression, h.name)),
    );
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (value === null || typeof value !== "object") return value;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) out[key] = rewrite(child);
    const select = (value as Node).SelectStmt as Node | undefined;
    const extra = select ? added.get(signature(select)) : undefined;
    if (extra) {
      const fields = out.SelectStmt as Node;
      fields.targetList = [...((fields.targetList as unknown[]) ?? []), ...extra];
      added.delete(signature(select!));
    }
    return out;
  };
  return statements.map((s) => stripLocations(rewrite(s.node)));
}

/** A SelectStmt is told apart by where its target list starts (locations are unique within one text). */
function signature(select: Node): string {
  const first = nodeType((select.targetList as Node[] | undefined)?.[0])?.[1];
  return String(first?.location ?? "none");
}

function hiddenTarget(expression: string, name: string): Node {
  const select = nodeType(parseStatements(`SELECT ${expression} AS "${name}"`)[0]!.node)![1];
  return stripLocations((select.targetList as Node[])[0]) as Node;
}

/**
 * The byte offset right after the target list whose last entry starts at `lastStart`: the end
 * of the last token before a clause keyword, a closing parenthesis or `;` at the same depth.
 */
function targetListEndAt(tokens: ReturnType<typeof scanSync>["tokens"], lastStart: number): number | undefined {
  let index = tokens.findIndex((token) => token.start >= lastStart);
  if (index < 0) return undefined;
  let depth = 0;
  let end = tokens[index]!.end;
  // The target's own first token is never a clause keyword.
  for (index++; index < tokens.length; index++) {
    const token = tokens[index]!;
    const text = token.text;
    if (text === "(" || text === "[") depth++;
    else if (text === ")" || text === "]") {
      if (depth === 0) return end;
      depth--;
    } else if (depth === 0 && text === ";") return end;
    else if (depth === 0 && token.keywordKind !== 0) {
      const word = text.toUpperCase();
      const previous = tokens[index - 1]?.text.toUpperCase();
      if (targetListEnd.has(word) && expressionPairs[word] !== previous) return end;
    }
    end = token.end;
  }
  return end;
}

function characters(bytes: Buffer): number {
  return [...bytes.toString("utf8")].length;
}

const keywordLabelSet: ReadonlySet<string> = new Set(keywordLabels);

/**
 * Names the client wrote, as PostgreSQL's scanner reads them: identifiers (unquoted ones folded
 * to lower case, quoted ones as written) and keywords, besides the labels PostgreSQL makes from
 * keywords. What U& escapes spell is not included: such a label becomes ?column?.
 */
export function namesWritten(sql: string): Set<string> {
  const names = new Set<string>(keywordLabels);
  for (const token of postgresParser().scanSync(sql).tokens) {
    const text = token.text;
    if (text.startsWith('"')) names.add(text.slice(1, -1).replace(/""/g, '"'));
    else if (token.tokenName === "IDENT" || token.keywordKind !== 0) names.add(text.toLowerCase());
  }
  return names;
}

/** Every name in the parse trees (identifiers, aliases, relation, CTE and cursor names), for the reserved-prefix check. */
function identifiersOf(statements: ParsedStatement[]): Set<string> {
  const names = new Set<string>();
  const nameKeys = ["name", "aliasname", "relname", "ctename", "portalname", "colname", "schemaname"];
  for (const statement of statements) {
    walkNodes(statement.node, (type, fields) => {
      if (type === "String" && typeof fields.sval === "string") names.add(fields.sval);
      for (const key of nameKeys) if (typeof fields[key] === "string") names.add(fields[key] as string);
      const alias = fields.alias as Node | undefined;
      if (alias && typeof alias.aliasname === "string") names.add(alias.aliasname);
    });
  }
  return names;
}

/** `text` (a message from the backend) with the names of hidden columns replaced: they are never shown. */
export function withoutHiddenNames(text: string): string {
  return text.includes(hiddenPrefix) ? text.replaceAll(new RegExp(`${hiddenPrefix}\\d+`, "g"), "(a column the export added)") : text;
}

/** Maps a 1-based character position in an analysed text back to the client's text; undefined inside inserted text. */
export function originalPosition(analysis: QueryAnalysis, position: number): number | undefined {
  let at = position - 1;
  for (let i = analysis.insertions.length - 1; i >= 0; i--) {
    const insertion = analysis.insertions[i]!;
    if (at >= insertion.at + insertion.length) at -= insertion.length - (insertion.replaced ?? 0);
    else if (at >= insertion.at) return undefined;
  }
  return at + 1;
}
