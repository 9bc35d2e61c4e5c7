import type { MappingView } from "../../../exports/row-decider";
import type { RelationCheck } from "../result-plan";
import { analyseStatement, printWithColumns, type SelectShape, type StatementPolicy } from "./statement-analysis";

/** The names the export gives the columns it adds (checked in the result: the last columns must carry them, in order). */
export const hiddenColumnPrefix = "warden_user_";

/** A resource-context column of one instance that the statement does not return: added, decided on, stripped. */
export interface HiddenColumn {
  /** The instance's alias (its name when it has none). */
  alias: string;
  column: string;
}

/** A SELECT rewritten with hidden user columns: the text the backend runs and its own analysis. */
export interface RewrittenSelect {
  text: string;
  shape: SelectShape;
}

/**
 * The resource-context columns the mapping names for the statement's instances (each only for
 * the relation it names, as the result plan checks it) that the select list does not plainly
 * return: an instance whose user column is missing would decide nothing, and its rows would
 * vanish (`SELECT email FROM users`). None for results that are not attributable and for
 * DISTINCT (an added column would change which rows are distinct).
 */
export function missingUserColumns(shape: SelectShape, mapping: MappingView, relationMaps: RelationCheck, database: string | undefined): HiddenColumn[] {
  if (!shape.attributable || shape.distinct) return [];
  const missing: HiddenColumn[] = [];
  for (const instance of shape.instances.values()) {
    const schema = instance.db ?? database;
    if (schema === undefined) continue;
    const columns = new Set<string>();
    for (const field of mapping.fields.values()) {
      if (field.resourceOrder < 0) continue;
      const parts = field.recordField.split(".");
      const names = parts.length === 3 ? parts[0] === schema && parts[1] === instance.table : parts.length === 2 && parts[0] === instance.table;
      if (names && relationMaps(field.recordField, schema, instance.table)) columns.add(parts[parts.length - 1]!);
    }
    for (const column of columns) if (!returned(shape, instance.alias, column)) missing.push({ alias: instance.alias, column });
  }
  return missing;
}

/** Whether the select list returns the instance's column as a plain column or through a star. */
function returned(shape: SelectShape, alias: string, column: string): boolean {
  const alone = shape.instances.size === 1;
  return shape.entries.some((entry) => {
    if (entry.kind === "expression") return false;
    const ofInstance = entry.table === alias || (entry.table === null && (entry.kind === "star" || alone));
    return ofInstance && (entry.kind === "star" || entry.column.toLowerCase() === column.toLowerCase());
  });
}

/**
 * The statement with the hidden columns appended to its outer select list (`alias`.`column` AS
 * `warden_user_<n>`), printed by the parser from its own tree, and the analysis of that printed
 * text (what the backend runs is what was analysed). Undefined when the printed text does not
 * analyse as the same select list with the hidden columns at its end: the statement then runs
 * as the client wrote it and its instances decide nothing (fail closed).
 */
export function withHiddenColumns(text: string, hidden: readonly HiddenColumn[], policy: StatementPolicy): RewrittenSelect | undefined {
  const original = analyseStatement(text, policy);
  if (original.kind !== "select" || !original.shape.attributable || hidden.length === 0) return undefined;
  const printed = printWithColumns(
    text,
    hidden.map((h, i) => ({ table: h.alias, column: h.column, as: `${hiddenColumnPrefix}${i}` })),
  );
  if (printed === undefined) return undefined;
  const analysis = analyseStatement(printed, policy);
  if (analysis.kind !== "select") return undefined;
  const { shape } = analysis;
  const expected = [...original.shape.entries, ...hidden.map((h) => ({ kind: "column", table: h.alias, column: h.column }))];
  if (JSON.stringify(shape.entries) !== JSON.stringify(expected)) return undefined;
  if (shape.attributable !== original.shape.attributable || shape.instances.size !== original.shape.instances.size) return undefined;
  for (const [alias, instance] of original.shape.instances) {
    const again = shape.instances.get(alias);
    if (!again || again.table !== instance.table || again.db !== instance.db) return undefined;
  }
  return { text: printed, shape: { ...shape, hiddenCount: hidden.length } };
}
