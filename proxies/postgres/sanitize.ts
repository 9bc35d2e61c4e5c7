import { ErrorField, type ErrorFields } from "../../protocols/postgres/error-response";

/** Fields that never carry data values: severity, code, position in the client's own query, server source location, object names. */
const keptFields = new Set<number>([ErrorField.Severity, ErrorField.SeverityNonLocalized, ErrorField.Code, ErrorField.Position, ErrorField.Schema, ErrorField.Table, ErrorField.Column, ErrorField.DataType, ErrorField.Constraint, ErrorField.File, ErrorField.Line, ErrorField.Routine]);

/**
 * SQLSTATE classes whose message text can quote a value: data exceptions (22), PL/pgSQL RAISE
 * (P0), routine exceptions (2F, 38, 39). Their message is replaced; every class loses detail,
 * hint, context and internal query, which can quote values too (class 23's detail names the key).
 */
const valueQuotingClasses = new Set(["22", "P0", "2F", "38", "39"]);

/**
 * SQLSTATEs raised when a value is cast to an object reference (regclass, regtype, regproc,
 * regnamespace, regrole): the message names the "object", which is the value.
 */
const objectLookupCodes = new Set(["42P01", "42704", "42883", "3F000", "42P02"]);

/**
 * Whether an error's message may quote data: by its class or code, or because it was raised
 * inside server-side code (it has a context or an internal query), where dynamic SQL can put
 * any value into any message.
 */
function mayQuoteValues(fields: ErrorFields, code: string): boolean {
  return valueQuotingClasses.has(code.slice(0, 2)) || objectLookupCodes.has(code) || fields.has(ErrorField.Where) || fields.has(ErrorField.InternalQuery);
}

/** An error as the client may see it: never a value from the backend's data. */
export function sanitizeError(fields: ErrorFields): ErrorFields {
  const out: ErrorFields = new Map();
  const code = fields.get(ErrorField.Code) ?? "XX000";
  const withhold = mayQuoteValues(fields, code);
  for (const [field, value] of fields) {
    if (keptFields.has(field)) out.set(field, value);
    else if (field === ErrorField.Message) out.set(field, withhold ? `${messageForClass(code)} (the server's message is withheld by the export: it can quote data values)` : value);
  }
  if (!out.has(ErrorField.Message)) out.set(ErrorField.Message, "error");
  return out;
}

function messageForClass(code: string): string {
  switch (code.slice(0, 2)) {
    case "22":
      return `data exception ${code}`;
    case "P0":
      return `PL/pgSQL error ${code}`;
    case "2F":
    case "38":
    case "39":
      return `routine error ${code}`;
    default:
      return objectLookupCodes.has(code) ? `undefined object ${code}` : `error ${code}`;
  }
}

/**
 * A notice as the client may see it: severity and code only. A notice's text is written by
 * whoever raised it (RAISE NOTICE can print any value the backend role can read).
 */
export function sanitizeNotice(fields: ErrorFields): ErrorFields {
  const out: ErrorFields = new Map();
  for (const field of [ErrorField.Severity, ErrorField.SeverityNonLocalized, ErrorField.Code]) {
    const value = fields.get(field);
    if (value !== undefined) out.set(field, value);
  }
  out.set(ErrorField.Message, `notice ${fields.get(ErrorField.Code) ?? ""} (text withheld by the export)`);
  return out;
}
