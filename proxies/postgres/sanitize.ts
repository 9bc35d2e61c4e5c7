import { ErrorField, type ErrorFields } from "../../protocols/postgres/error-response";

/** Fields kept in every error and notice: severity, position in the client's own query, the server's source location. */
const alwaysKept = new Set<number>([
  ErrorField.Severity,
  ErrorField.SeverityNonLocalized,
  ErrorField.Position,
  ErrorField.File,
  ErrorField.Line,
  ErrorField.Routine,
]);
/** Object names: kept only with the message (RAISE ... USING TABLE/COLUMN can set them to anything). */
const keptWithMessage = new Set<number>([ErrorField.Schema, ErrorField.Table, ErrorField.Column, ErrorField.DataType, ErrorField.Constraint]);

/** SQLSTATE classes whose message can quote a value even when it points into the query. */
const valueQuotingClasses = new Set(["22", "P0", "2F", "38", "39"]);

/**
 * Errors without a position whose message the server writes without data values: connection,
 * authentication, transaction state, concurrency, resources, cancellation, permissions,
 * constraint names (class 23's values are in the detail, which never crosses).
 */
const messageSafeClasses = new Set(["08", "25", "28", "40", "53", "54", "57"]);
const messageSafeCodes = new Set(["42501", "55P03", "55006", "0A000"]);

/** SQLSTATEs an application may rely on, kept even when raised inside server-side code (others could spell data). */
const wellKnownCodes = new Set([
  "23000",
  "23001",
  "23502",
  "23503",
  "23505",
  "23514",
  "23P01",
  "40001",
  "40P01",
  "55P03",
  "57014",
  "42501",
  "42P01",
  "42703",
  "42883",
  "22001",
  "22003",
  "22007",
  "22008",
  "22012",
  "22023",
  "22P02",
  "25P02",
  "P0001",
  "P0002",
  "P0003",
  "P0004",
  "0A000",
  "53100",
  "53200",
  "53300",
  "54000",
  "XX000",
]);

/** Whether an error's message (and object names) may cross: written by the server about the query, not about data. */
function messageMayCross(fields: ErrorFields, code: string): boolean {
  // Raised inside server-side code: dynamic SQL can put any value into any message.
  if (fields.has(ErrorField.Where) || fields.has(ErrorField.InternalQuery)) return false;
  const errorClass = code.slice(0, 2);
  if (valueQuotingClasses.has(errorClass)) return false;
  // A position points into the client's own query: parse and analysis errors quote its text.
  if (fields.has(ErrorField.Position)) return true;
  return messageSafeClasses.has(errorClass) || messageSafeCodes.has(code);
}

/** The SQLSTATE as the client may see it: a code raised inside server-side code may be chosen to spell data. */
function codeThatMayCross(fields: ErrorFields, code: string, fallback: string): string {
  const insideServerCode = fields.has(ErrorField.Where) || fields.has(ErrorField.InternalQuery);
  return !insideServerCode || wellKnownCodes.has(code) ? code : fallback;
}

/**
 * Integrity errors name the constraint, table and column, and any of those names can be made
 * of data (a constraint named by dynamic SQL): they cross with their SQLSTATE and a fixed text,
 * and with the names the export knows (its catalog's) only.
 */
const integrityMessages: Record<string, string> = {
  "23505": "duplicate key value violates a unique constraint",
  "23503": "insert or update violates a foreign key constraint",
  "23502": "null value violates a not-null constraint",
  "23514": "new row violates a check constraint",
  "23P01": "conflicting key value violates an exclusion constraint",
  "23001": "operation violates a restrict constraint",
};

/** Whether an object name in an error is one the export knows (a relation or column of its catalog). */
export type KnownName = (field: number, name: string) => boolean;

/**
 * An error as the client may see it: never a value from the backend's data. Detail, hint,
 * context and internal query never cross; the message only when `messageMayCross`.
 */
export function sanitizeError(fields: ErrorFields, known: KnownName = () => false): ErrorFields {
  const code = fields.get(ErrorField.Code) ?? "XX000";
  const integrity = code.startsWith("23");
  const keepMessage = !integrity && messageMayCross(fields, code);
  const out: ErrorFields = new Map();
  for (const [field, value] of fields) {
    if (alwaysKept.has(field) || (keepMessage && keptWithMessage.has(field))) out.set(field, value);
    else if (integrity && keptWithMessage.has(field) && field !== ErrorField.Constraint && known(field, value)) out.set(field, value);
    else if (field === ErrorField.Code) out.set(field, codeThatMayCross(fields, code, "P0001"));
    else if (field === ErrorField.Message) {
      if (integrity) out.set(field, integrityMessages[code] ?? "integrity constraint violation");
      else
        out.set(
          field,
          keepMessage ? value : `error ${codeThatMayCross(fields, code, "P0001")} (the server's message is withheld by the export: it can quote data values)`,
        );
    }
  }
  if (!out.has(ErrorField.Message)) out.set(ErrorField.Message, "error");
  return out;
}

/**
 * A notice as the client may see it: severity and code only. A notice's text is written by
 * whoever raised it (RAISE NOTICE can print any value the backend role can read).
 */
export function sanitizeNotice(fields: ErrorFields): ErrorFields {
  const out: ErrorFields = new Map();
  for (const field of [ErrorField.Severity, ErrorField.SeverityNonLocalized]) {
    const value = fields.get(field);
    if (value !== undefined) out.set(field, value);
  }
  const code = codeThatMayCross(fields, fields.get(ErrorField.Code) ?? "00000", "00000");
  out.set(ErrorField.Code, code);
  out.set(ErrorField.Message, `notice ${code} (text withheld by the export)`);
  return out;
}
