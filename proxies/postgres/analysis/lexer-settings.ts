import { setConfigTarget, type Refusal } from "./read-only";
import { walkNodes, type Node } from "./sql-parser";

/**
 * Settings that change how the server reads a statement's text. The export reads every statement
 * with libpg-query as PostgreSQL does with their defaults; with `standard_conforming_strings` off
 * the server reads `'\'` as the start of a string that goes on, where the export reads a whole
 * string: text the export takes for a comment (or a catalog read) is a query of mapped tables to
 * the server. So no statement may change them, on any export, read-only or not; and a session that
 * reports one changed anyway (a startup option, a role's or the server's setting) is ended
 * (parameter-reports.ts). docs/postgres-export.md, "Statements".
 */
const lexerSettings = new Set(["standard_conforming_strings"]);

const refused = (what: string): Refusal => ({
  sqlState: "42501",
  message: `${what} is not allowed through this export: it changes how the server reads statement text`,
});

/** Whether a statement (anywhere in it: SET, SET LOCAL, ALTER ROLE/DATABASE/SYSTEM ... SET, set_config()) changes a setting of how text is read. */
export function lexerSettingRefusal(statement: Node): Refusal | undefined {
  let refusal: Refusal | undefined;
  walkNodes(statement, (type, fields) => {
    if (refusal) return;
    // ALTER ROLE/DATABASE/SYSTEM hold their SET as an unwrapped `setstmt`.
    const set = type === "VariableSetStmt" ? fields : (fields.setstmt as Node | undefined);
    if (set && lexerSettings.has(String(set.name ?? "").toLowerCase())) refusal = refused(`SET ${set.name}`);
    const target = type === "FuncCall" ? setConfigTarget(fields) : undefined;
    if (!target) return;
    // A name that is not a constant could be any setting.
    if (target.setting === null) refusal = refused("set_config() with a setting name that is not a constant");
    else if (lexerSettings.has(target.setting)) refusal = refused(`set_config('${target.written}', ...)`);
  });
  return refusal;
}
