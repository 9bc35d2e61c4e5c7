/**
 * A quick key for a text's form, without PostgreSQL's normalizer: one pass over the text that
 * replaces each plain constant with `$n`, as libpg-query's `normalize` does, and records each
 * constant's kind. Only texts whose constants this pass is sure of get a key: anything that
 * could lex differently from what it looks like (comments, `$`, backslashes in strings,
 * prefixed strings, numbers touching names or dots, characters outside ASCII) gives undefined,
 * and the caller asks the normalizer as before.
 *
 * The key is the kinds, a NUL, then the form. Two texts with one key differ only inside constants
 * of the same kind at the same places, so PostgreSQL's lexer reads the same tokens from both;
 * the cache still checks once per key that the normalizer's form is the key's form (see
 * AnalysisCache), so a place where this pass and PostgreSQL disagree (a negative number, strings
 * that continue over a line break) makes the key unusable instead of wrong.
 */
export function constantsKey(sql: string): string | undefined {
  let kinds = "";
  let form = "";
  let from = 0;
  const end = sql.length;
  for (let at = 0; at < end; ) {
    const c = sql.charCodeAt(at);
    if (c > 0x7e || c === char.dollar || c === char.backslash) return undefined;
    if (c === char.quote) {
      if (at > 0 && namePart(sql.charCodeAt(at - 1))) return undefined; // E'', B'', X'', N'' and names glued to strings
      const close = stringEnd(sql, at + 1);
      if (close < 0) return undefined;
      form += `${sql.slice(from, at)}$${kinds.length + 1}`;
      kinds += "s";
      at = from = close;
    } else if (c >= char.zero && c <= char.nine) {
      if (at > 0 && (namePart(sql.charCodeAt(at - 1)) || sql.charCodeAt(at - 1) === char.dot)) {
        if (sql.charCodeAt(at - 1) === char.dot) return undefined; // `.5` is one number to PostgreSQL
        at++; // a digit inside a name
        continue;
      }
      let after = digitsEnd(sql, at);
      let kind = "i";
      if (sql.charCodeAt(after) === char.dot) {
        const fraction = digitsEnd(sql, after + 1);
        if (fraction === after + 1) return undefined; // `1.` and `1..`
        after = fraction;
        kind = "d";
      }
      if (after < end && (namePart(sql.charCodeAt(after)) || sql.charCodeAt(after) === char.dot)) return undefined; // 1e5, 0x1F, 1_000, 1.2.3
      form += `${sql.slice(from, at)}$${kinds.length + 1}`;
      kinds += kind;
      at = from = after;
    } else if (c === char.doubleQuote) {
      const close = quotedNameEnd(sql, at + 1);
      if (close < 0) return undefined;
      at = close;
    } else if ((c === char.dash && sql.charCodeAt(at + 1) === char.dash) || (c === char.slash && sql.charCodeAt(at + 1) === char.star)) {
      return undefined; // comments
    } else {
      at++;
    }
  }
  if (kinds.length === 0) return undefined;
  return `${kinds}\u0000${form}${sql.slice(from)}`;
}

/** The form a key stands for (what libpg-query's normalize should return for its texts). */
export function formOfKey(key: string): string {
  return key.slice(key.indexOf("\u0000") + 1);
}

/** Character codes the pass looks for. */
const char = { dollar: 0x24, backslash: 0x5c, quote: 0x27, doubleQuote: 0x22, dot: 0x2e, dash: 0x2d, slash: 0x2f, star: 0x2a, zero: 0x30, nine: 0x39 } as const;

/** A character that continues a name (PostgreSQL's ident_cont, ASCII part). */
function namePart(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= char.zero && c <= char.nine) || c === 0x5f || c === char.dollar;
}

function digitsEnd(sql: string, at: number): number {
  while (at < sql.length && sql.charCodeAt(at) >= char.zero && sql.charCodeAt(at) <= char.nine) at++;
  return at;
}

/** Just past the quote that ends a standard string whose body starts at `at` (`''` is a quote inside); -1 when it does not end or holds what this pass does not read. */
function stringEnd(sql: string, at: number): number {
  for (; at < sql.length; at++) {
    const c = sql.charCodeAt(at);
    if (c > 0x7e || c === char.backslash || c < 0x20) return -1; // a line break inside is fine to PostgreSQL, but rare enough to leave to it
    if (c === char.quote) {
      if (sql.charCodeAt(at + 1) !== char.quote) return at + 1;
      at++;
    }
  }
  return -1;
}

/** Just past the `"` that ends a quoted name whose body starts at `at` (`""` is a quote inside); -1 when it does not end. */
function quotedNameEnd(sql: string, at: number): number {
  for (; at < sql.length; at++) {
    const c = sql.charCodeAt(at);
    if (c > 0x7e) return -1;
    if (c === char.doubleQuote) {
      if (sql.charCodeAt(at + 1) !== char.doubleQuote) return at + 1;
      at++;
    }
  }
  return -1;
}
