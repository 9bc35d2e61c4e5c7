import { nodeType, stringValue, type Node } from "./sql-parser";
import type { RelationView, SchemaView } from "./schema-view";

/**
 * Whose value is each output column of a SELECT (policy-semantics 4): the table instance
 * (range-table entry) it comes from, found by resolving names the way PostgreSQL does, on
 * the parse tree. Where a value's instance cannot be told for certain (an unknown relation's
 * columns, an ambiguous name, an expression), it has no origin and the export empties it.
 *
 * A value is decided by its own instance's resource-context column. When that column is not
 * already an output column, it is added as a hidden output column (appended to the target
 * list, so ordinals and column alias lists keep their meaning), carried up through every
 * subquery and CTE between the instance and the result, and stripped before the client sees
 * the row.
 */

interface TableItem {
  kind: "table";
  id: number;
  refName: string;
  relation: RelationView | undefined;
  /** Column names as the query sees them (an alias list renames the first ones). */
  names: string[] | undefined;
}
interface DerivedItem {
  kind: "derived";
  id: number;
  refName: string | undefined;
  sub: Level;
  aliases: string[];
}
interface JoinItem {
  kind: "join";
  id: number;
  refName: string | undefined;
  left: Item;
  right: Item;
  /** USING columns, or "natural"; undefined for ON/CROSS. */
  merged: string[] | "natural" | undefined;
  aliases: string[];
}
interface UnknownItem {
  kind: "unknown";
  id: number;
  refName: string | undefined;
}
type Item = TableItem | DerivedItem | JoinItem | UnknownItem;

/** Where a value comes from: a column of a table instance, or an output column of a subquery or CTE instance. */
export type Origin = { kind: "base"; item: TableItem; column: string; index: number } | { kind: "derived"; item: DerivedItem; index: number };

export interface OutputColumn {
  name: string | undefined;
  origin: Origin | undefined;
  /** Set on the hidden columns the export added. */
  hidden?: string;
}

/** One position of a SELECT's output: a known column, or a run of columns of unknown length (`*` over a relation the export does not know). */
export type LayoutEntry = { kind: "column"; column: OutputColumn } | { kind: "gap" };

interface CteEntry {
  /** Undefined for a CTE of WITH RECURSIVE: known by name only. */
  level: Level | undefined;
  /** Its column alias list. */
  aliases: string[];
}

/** One SELECT of the statement: its FROM items, the CTEs it declares, its hidden columns. */
export class Level {
  readonly items: Item[] = [];
  readonly ctes = new Map<string, CteEntry>();
  readonly hidden: Array<{ expression: string; name: string }> = [];
  /** Set operation (UNION...): its leftmost SELECT names its columns; no column has an origin. */
  left?: Level;
  /** VALUES: this many columns, named column1..n. */
  values?: number;
  /** GROUP BY, HAVING or DISTINCT ON...: an output value stands for many rows; no column has an origin. */
  collapses = false;

  constructor(
    /** The SelectStmt's fields (the hidden columns are spliced after its target list). */
    readonly select: Node,
    /** The query level whose FROM items correlated names may reach. */
    readonly parent: Level | undefined,
    /** Where CTE names are looked up after this level's own. */
    readonly cteParent: Level | undefined,
  ) {}
}

export class Attribution {
  private nextId = 0;
  private nextHidden = 0;
  /** Hidden names are `${hiddenPrefix}${n}`, numbered per statement. */

  constructor(
    private readonly schema: SchemaView,
    /** Hidden column names: this prefix and a counter (random per analysis: no relation can carry it by chance). */
    private readonly hiddenPrefix: string,
  ) {}

  /** Builds the levels of a SELECT (any of its subqueries in FROM and its CTEs included). */
  level(select: Node, parent: Level | undefined, cteParent: Level | undefined): Level {
    const level = new Level(select, parent, cteParent);
    if (select.withClause) this.declareCtes(level, select.withClause as Node);
    if (select.op !== undefined && select.op !== "SETOP_NONE") {
      const left = nodeType(select.larg)?.[1];
      if (left) level.left = this.level(left, parent, level);
      return level;
    }
    const values = select.valuesLists as Node[] | undefined;
    if (values) {
      level.values = ((nodeType(values[0])?.[1].items as unknown[]) ?? []).length;
      return level;
    }
    level.collapses = Boolean(
      select.groupClause ||
        select.havingClause ||
        select.groupDistinct ||
        (select.distinctClause && (select.distinctClause as unknown[]).some((e) => e !== null && Object.keys(e as object).length > 0)),
    );
    for (const item of (select.fromClause as Node[] | undefined) ?? []) level.items.push(this.fromItem(item, level));
    return level;
  }

  private declareCtes(level: Level, withClause: Node): void {
    const recursive = Boolean(withClause.recursive);
    for (const cte of (withClause.ctes as Node[] | undefined) ?? []) {
      const fields = nodeType(cte)?.[1];
      if (!fields) continue;
      const name = String(fields.ctename);
      const entry: CteEntry = { level: undefined, aliases: ((fields.aliascolnames as Node[] | undefined) ?? []).map((n) => stringValue(n) ?? "") };
      // In WITH RECURSIVE a CTE may name itself or later ones: every one is known by name only.
      level.ctes.set(name, entry);
      const query = nodeType(fields.ctequery);
      if (!recursive && query?.[0] === "SelectStmt") entry.level = this.level(query[1], level.parent, level);
    }
  }

  private findCte(level: Level | undefined, name: string): CteEntry | undefined {
    for (let at = level; at; at = at.cteParent) {
      const entry = at.ctes.get(name);
      if (entry) return entry;
    }
    return undefined;
  }

  private fromItem(node: Node, level: Level): Item {
    const typed = nodeType(node);
    const id = this.nextId++;
    if (!typed) return { kind: "unknown", id, refName: undefined };
    const [type, fields] = typed;
    const alias = fields.alias as Node | undefined;
    const aliasName = alias?.aliasname as string | undefined;
    const aliasColumns = ((alias?.colnames as Node[] | undefined) ?? []).map((n) => stringValue(n) ?? "");
    switch (type) {
      case "RangeVar": {
        const name = String(fields.relname);
        const schemaName = fields.schemaname as string | undefined;
        const refName = aliasName ?? name;
        const cte = schemaName === undefined ? this.findCte(level, name) : undefined;
        if (cte) {
          if (!cte.level) return { kind: "unknown", id, refName };
          return { kind: "derived", id, refName, sub: cte.level, aliases: aliasColumns.length > 0 ? aliasColumns : cte.aliases };
        }
        const candidates = this.schema.relations(name, schemaName);
        const relation = candidates.length === 1 ? candidates[0] : undefined;
        const names = relation ? relation.columns.map((column, i) => aliasColumns[i] ?? column) : undefined;
        return { kind: "table", id, refName, relation, names };
      }
      case "RangeSubselect": {
        const sub = nodeType(fields.subquery);
        if (sub?.[0] !== "SelectStmt") return { kind: "unknown", id, refName: aliasName };
        // LATERAL sees the FROM items before it; a plain subquery only the levels outside this one.
        const subLevel = this.level(sub[1], fields.lateral ? level : level.parent, level);
        return { kind: "derived", id, refName: aliasName, sub: subLevel, aliases: aliasColumns };
      }
      case "JoinExpr": {
        const left = this.fromItem(fields.larg as Node, level);
        const right = this.fromItem(fields.rarg as Node, level);
        const using = fields.usingClause as Node[] | undefined;
        const merged = fields.isNatural ? "natural" : using ? using.map((n) => stringValue(n) ?? "") : undefined;
        return { kind: "join", id, refName: aliasName, left, right, merged, aliases: aliasColumns };
      }
      case "RangeFunction": {
        const call = nodeType(((fields.functions as Node[] | undefined)?.[0] as unknown as Node[] | undefined)?.[0]);
        const name = ((call?.[1].funcname as Node[] | undefined) ?? []).map(stringValue).pop();
        return { kind: "unknown", id, refName: aliasName ?? name };
      }
      default:
        return { kind: "unknown", id, refName: aliasName };
    }
  }

  /** An item's columns as the query sees them; undefined when the export cannot know them. */
  columnsOf(item: Item): OutputColumn[] | undefined {
    switch (item.kind) {
      case "table": {
        const { relation, names } = item;
        if (!relation || !names) return undefined;
        return names.map((name, index) => ({ name, origin: relation.mapped ? { kind: "base", item, column: relation.columns[index]!, index } : undefined }));
      }
      case "derived": {
        const outputs = this.outputsOf(item.sub);
        if (!outputs) return undefined;
        return outputs.map((column, index) => ({
          name: item.aliases[index] ?? column.name,
          origin: column.origin ? { kind: "derived", item, index } : undefined,
          hidden: column.hidden,
        }));
      }
      case "join": {
        const left = this.columnsOf(item.left);
        const right = this.columnsOf(item.right);
        if (!left || !right) return undefined;
        let merged: string[] = [];
        if (item.merged === "natural") merged = left.filter((l) => l.name !== undefined && right.some((r) => r.name === l.name)).map((l) => l.name!);
        else if (item.merged) merged = item.merged;
        const isMerged = (column: OutputColumn) => column.name !== undefined && merged.includes(column.name);
        // A merged column is one value for two instances: it has no origin of its own.
        const columns: OutputColumn[] = [
          ...merged.map((name) => ({ name, origin: undefined })),
          ...left.filter((c) => !isMerged(c)),
          ...right.filter((c) => !isMerged(c)),
        ];
        return columns.map((column, index) => ({ ...column, name: item.aliases[index] ?? column.name }));
      }
      case "unknown":
        return undefined;
    }
  }

  /** The output columns of a level, or undefined when their number or order is not known. */
  outputsOf(level: Level): OutputColumn[] | undefined {
    const layout = this.layout(level);
    if (layout.some((entry) => entry.kind === "gap")) return undefined;
    return layout.map((entry) => (entry as { column: OutputColumn }).column);
  }

  /** The output of a level, position by position, hidden columns at the end. */
  layout(level: Level): LayoutEntry[] {
    if (level.left)
      return this.layout(level.left).map((entry) =>
        entry.kind === "gap" ? entry : { kind: "column", column: { name: entry.column.name, origin: undefined, hidden: entry.column.hidden } },
      );
    if (level.values !== undefined)
      return Array.from({ length: level.values }, (_, i) => ({ kind: "column", column: { name: `column${i + 1}`, origin: undefined } }));
    const entries: LayoutEntry[] = [];
    for (const target of (level.select.targetList as Node[] | undefined) ?? []) {
      const fields = nodeType(target)?.[1] ?? {};
      const label = fields.name as string | undefined;
      const ref = nodeType(fields.val);
      if (ref?.[0] !== "ColumnRef") {
        entries.push({ kind: "column", column: { name: label, origin: undefined } });
        continue;
      }
      const parts = (ref[1].fields as Node[] | undefined) ?? [];
      const last = nodeType(parts[parts.length - 1]);
      if (last?.[0] === "A_Star") {
        for (const columns of this.starColumns(level, parts)) {
          if (columns) for (const column of columns) entries.push({ kind: "column", column: level.collapses ? { ...column, origin: undefined } : column });
          else entries.push({ kind: "gap" });
        }
        continue;
      }
      const name = label ?? stringValue(parts[parts.length - 1]);
      entries.push({ kind: "column", column: { name, origin: level.collapses ? undefined : this.resolve(level, parts) } });
    }
    for (const hidden of level.hidden) entries.push({ kind: "column", column: { name: hidden.name, origin: undefined, hidden: hidden.name } });
    return entries;
  }

  /** What `*` or `t.*` expands to: the columns of each item (undefined: an item whose columns are unknown). */
  private starColumns(level: Level, parts: Node[]): Array<OutputColumn[] | undefined> {
    if (parts.length === 1) return level.items.flatMap((item) => this.segmentsOf(item));
    if (parts.length !== 2) return [undefined];
    const found = this.itemsNamed(level, stringValue(parts[0]) ?? "");
    return found.length === 1 && found[0] ? [this.columnsOf(found[0])] : [undefined];
  }

  /**
   * An item's columns in runs: a join without USING, NATURAL or an alias list is its sides one
   * after the other, so a side whose columns are unknown leaves the other side's known.
   */
  private segmentsOf(item: Item): Array<OutputColumn[] | undefined> {
    if (item.kind === "join" && item.merged === undefined && item.aliases.length === 0) return [...this.segmentsOf(item.left), ...this.segmentsOf(item.right)];
    return [this.columnsOf(item)];
  }

  /** FROM items of this level answering to `name` (inside joins without an alias too); `undefined` marks one hidden inside an aliased join. */
  private itemsNamed(level: Level, name: string): Array<Item | undefined> {
    const found: Array<Item | undefined> = [];
    const visit = (item: Item, visible: boolean) => {
      if (item.refName === name) found.push(visible ? item : undefined);
      if (item.kind === "join") {
        // An aliased join hides the names inside it; a reference to one is an error, never an outer name.
        const inner = visible && item.refName === undefined;
        visit(item.left, inner);
        visit(item.right, inner);
      }
    };
    for (const item of level.items) visit(item, true);
    return found;
  }

  /** The origin of a column reference in `level`'s target list, resolved as PostgreSQL does; undefined when not certain. */
  resolve(level: Level, parts: Node[]): Origin | undefined {
    const names = parts.map(stringValue);
    if (names.some((n) => n === undefined)) return undefined;
    if (names.length === 1) return this.resolveUnqualified(level, names[0]!);
    if (names.length !== 2) return undefined;
    for (let at: Level | undefined = level; at; at = at.parent) {
      const found = this.itemsNamed(at, names[0]!);
      if (found.length === 0) continue;
      if (found.length > 1 || !found[0]) return undefined;
      const matches = (this.columnsOf(found[0]) ?? []).filter((c) => c.name === names[1]);
      return matches.length === 1 ? matches[0]!.origin : undefined;
    }
    return undefined;
  }

  private resolveUnqualified(level: Level, name: string): Origin | undefined {
    for (let at: Level | undefined = level; at; at = at.parent) {
      let unknown = false;
      const matches: OutputColumn[] = [];
      for (const columns of at.items.flatMap((item) => this.segmentsOf(item))) {
        if (!columns) unknown = true;
        else matches.push(...columns.filter((c) => c.name === name));
      }
      // One known match: PostgreSQL takes it, or refuses the name as ambiguous (when an unknown item has it too).
      if (matches.length === 1) return matches[0]!.origin;
      if (matches.length > 1 || unknown) return undefined;
    }
    return undefined;
  }

  /**
   * Expressions, valid in `level`, that give the resource-context values of the instance a
   * value with this origin comes from (one per resource-context column, in mapping order).
   * Adds hidden columns to the subqueries and CTEs in between. Undefined when it cannot.
   */
  subjectExpressions(level: Level, origin: Origin): string[] | undefined {
    if (!this.reachable(level, origin.item)) return undefined;
    const reference = quoteIdentifier(origin.item.refName!);
    if (origin.kind === "base") {
      const { relation, names } = origin.item;
      if (!relation || !names || relation.subjectColumns.length === 0) return undefined;
      const visible = relation.subjectColumns.map((column) => names[relation.columns.indexOf(column)]);
      if (visible.some((name) => name === undefined)) return undefined;
      return visible.map((name) => `${reference}.${quoteIdentifier(name!)}`);
    }
    const sub = origin.item.sub;
    const inner = this.outputsOf(sub)?.[origin.index]?.origin;
    if (!inner || sub.left || sub.collapses) return undefined;
    const expressions = this.subjectExpressions(sub, inner);
    return expressions?.map((expression) => `${reference}.${quoteIdentifier(this.hiddenColumn(sub, expression))}`);
  }

  /** The hidden column of `level` that outputs `expression` (added once). */
  hiddenColumn(level: Level, expression: string): string {
    const existing = level.hidden.find((h) => h.expression === expression);
    if (existing) return existing.name;
    const name = this.hiddenPrefix + String(this.nextHidden++);
    level.hidden.push({ expression, name });
    return name;
  }

  /** Whether `item`'s name, looked up from `level` outwards, finds exactly that item. */
  private reachable(level: Level, item: Item): boolean {
    if (item.refName === undefined) return false;
    for (let at: Level | undefined = level; at; at = at.parent) {
      const found = this.itemsNamed(at, item.refName);
      if (found.length === 0) continue;
      return found.length === 1 && found[0] === item;
    }
    return false;
  }
}

export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The base instance and column behind an origin (through subqueries and CTEs), for checking against the catalog. */
export function baseOf(attribution: Attribution, origin: Origin): { relation: RelationView; column: string; key: string } | undefined {
  let at: Origin | undefined = origin;
  const path: number[] = [];
  while (at && at.kind === "derived") {
    path.push(at.item.id);
    const sub: Level = at.item.sub;
    if (sub.left || sub.collapses) return undefined;
    at = attribution.outputsOf(sub)?.[at.index]?.origin;
  }
  if (!at?.item.relation) return undefined;
  return { relation: at.item.relation, column: at.column, key: `${path.join("/")}#${at.item.id}` };
}
