import type { ErrPacket } from "../../protocols/mysql/err-packet";

/**
 * Server messages kept as they are, each only in its server's exact wording and only when what
 * it quotes is part of the client's own statement: a parse error quotes the statement, an
 * unknown table or column names what the client wrote. Anything else may quote a value (a
 * duplicate key, ExtractValue's XPath error, a SIGNAL's MESSAGE_TEXT, "Truncated incorrect
 * INTEGER value: '<value>'"), and stored code can raise any error number with any text: so the
 * wording must match and every quoted part must be in the statement.
 */
const kept = new Map<number, RegExp>([
  [
    1064,
    /^You have an error in your SQL syntax; check the manual that corresponds to your (?:MariaDB|MySQL) server version for the right syntax to use near '([\s\S]*)' at line \d+$/,
  ],
  [1054, /^Unknown column '([^']*)' in '(?:field list|where clause|order clause|having clause|on clause|group statement|IN \(\.\.\.\)|SELECT)'$/],
  // The database part must be the statement's too, or the session's (the server names it for unqualified tables).
  [1146, /^Table '(?:([^'.]*)\.)?([^'.]*)' doesn't exist$/],
]);

/** The text that replaces a withheld message (the error number and SQLSTATE stay). */
export function withheldMessage(code: number): string {
  return `error ${code} (the server's message is withheld by the export: it can quote values)`;
}

/**
 * The error as the client may see it: the same number and SQLSTATE, the message kept only when
 * `kept` says so for the statement the client sent (undefined: no statement, keep none), whose
 * unqualified tables are the session's `database`'s.
 */
export function sanitizeError(error: ErrPacket, statement: string | undefined, database?: string): ErrPacket {
  const pattern = kept.get(error.code);
  const match = pattern?.exec(error.message);
  const quotedIn = (quoted: string | undefined, i: number) =>
    quoted === undefined || statement!.includes(quoted) || (error.code === 1146 && i === 0 && database !== undefined && quoted === database);
  if (statement && match?.slice(1).every(quotedIn)) return error;
  return { ...error, message: withheldMessage(error.code) };
}

/** SHOW WARNINGS' Message column, replaced (the level and code stay). */
export const withheldWarning = Buffer.from("(message withheld by the export: it can quote values)");
