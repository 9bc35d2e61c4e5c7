import { postgresParser } from "./sql-parser";
import { constantsKey, formOfKey } from "./constants-key";
import type { SchemaView } from "./schema-view";
import { analyzeQuery, namesWritten, type QueryAnalysis, type StatementPolicy } from "./statement-analysis";

/** Texts longer than this are analysed each time rather than kept. */
const longestKept = 16_384;

/** Where a text could name something the analysis treats specially (reserved names, U& escapes): never answered by its constants' form. */
const specialSpelling = /__warden|u&/i;

/** A form's analysis, with the hidden columns it splices in (positions in the form, before any insertion). */
interface Template {
  analysis: QueryAnalysis;
  edits: Array<{ at: number; text: string }>;
}

/** The analyses kept under one schema and policy: by exact text, and by the form with constants replaced by parameters. */
interface Bucket {
  texts: Map<string, QueryAnalysis>;
  /** Normalized text -> its analysis when it holds for every constant in its places; null when it does not (the text is analysed itself). */
  forms: Map<string, Template | null>;
  /**
   * constantsKey -> its form's template, once the normalizer's form of a text with that key was
   * the key's form; null when it was not (or the form is not used): such texts go to the normalizer.
   */
  keys: Map<string, Template | null>;
}

/**
 * Analyses for an export's sessions. A prepared workload parses each statement once (by text).
 * A simple-protocol workload sends a new text per statement, differing only in constants:
 * PostgreSQL's own normalizer (libpg-query `normalize`, the parser plus the scanner that finds each
 * constant) turns the text into its form with `$n` parameters, and that form is analysed once.
 * Sound because the analysis of a form treats a parameter as any value the client could write:
 * it is the analysis of the same statement prepared with parameters. A form's analysis is used
 * for a text only when it holds whatever the constants are: plain SELECTs, nothing refused,
 * not strict (ordinals are constants there), not pushdown (the text sent is rewritten), no
 * reserved names or U& escapes. Otherwise the text is analysed itself, as before.
 * Hidden columns the form's analysis spliced in are spliced into the client's text at the same
 * places (`spliceLikeForm`), and used only when that text normalizes to exactly the spliced form:
 * the text sent is then of the form whose parse was checked to carry those columns.
 * The normalizer costs more than the rest of a simple-protocol round trip: a text whose
 * constants a quick pass can find (`constantsKey`) is looked up by that key first, and the
 * normalizer runs for a key only until it has confirmed the key's form once.
 */
export class AnalysisCache {
  /** By policy, then by schema key (the same string object per schema view: no key is built per look-up). */
  private readonly buckets = new Map<string, Map<string, Bucket>>();
  private size = 0;
  /** Answered from the cache by exact text. */
  hits = 0;
  /** Answered by the analysis of the text's form (its constants replaced by parameters), made earlier. */
  formHits = 0;
  /** Of formHits, those found by constantsKey without the normalizer. */
  keyHits = 0;
  /** Analysed with the parser and attribution (a text, or a form seen first). */
  misses = 0;

  constructor(private readonly capacity = 2048) {}

  get(sql: string, schema: SchemaView, policy: StatementPolicy): QueryAnalysis {
    const bucket = this.bucket(schema, policy);
    const found = bucket.texts.get(sql);
    if (found) {
      this.hits++;
      bucket.texts.delete(sql);
      bucket.texts.set(sql, found);
      return found;
    }
    const byForm = policy.strict || policy.pushdown ? undefined : this.byForm(sql, bucket, schema, policy);
    if (byForm) return byForm;
    this.misses++;
    const analysis = analyzeQuery(sql, schema, policy);
    if (sql.length <= longestKept) this.keep(bucket.texts, sql, analysis);
    return analysis;
  }

  /** The analysis of `sql`'s form when it holds for `sql` (see the class comment); undefined: analyse the text itself. */
  private byForm(sql: string, bucket: Bucket, schema: SchemaView, policy: StatementPolicy): QueryAnalysis | undefined {
    if (sql.length > longestKept || specialSpelling.test(sql)) return undefined;
    const key = constantsKey(sql);
    const known = key === undefined ? undefined : bucket.keys.get(key);
    if (known && known.edits.length === 0) {
      this.keyHits++;
      return this.answer(sql, { text: sql, insertions: [] }, known);
    }
    let form: string;
    try {
      form = postgresParser().normalizeSync(sql);
    } catch {
      return undefined; // a syntax error: the text's own analysis reports it
    }
    // No constants (kept by text), or not the text with spans replaced (an error message comes back as the result).
    if (form === sql || !spansReplaced(sql, form)) return undefined;
    let template = bucket.forms.get(form);
    if (template === undefined) {
      this.misses++;
      template = templateOf(analyzeQuery(form, schema, policy), form);
      this.keep(bucket.forms, form, template);
    } else {
      bucket.forms.delete(form);
      bucket.forms.set(form, template);
    }
    // The key is usable only when the normalizer's form is the key's form: the quick pass found the constants PostgreSQL finds.
    if (key !== undefined && known === undefined) this.keep(bucket.keys, key, formOfKey(key) === form ? template : null);
    if (template === null) return undefined;
    const spliced = template.edits.length > 0 ? spliceLikeForm(sql, form, template) : { text: sql, insertions: [] };
    if (!spliced) return undefined;
    return this.answer(sql, spliced, template);
  }

  /** A form's analysis for the client's text `sql` (sent as `sent.text`). */
  private answer(sql: string, sent: Pick<QueryAnalysis, "text" | "insertions">, template: Template): QueryAnalysis {
    this.formHits++;
    let names: Set<string> | undefined;
    // Labels the client wrote are read from its own text, not the form's.
    return {
      text: sent.text,
      statements: template.analysis.statements,
      insertions: sent.insertions,
      identifiers: () => (names ??= namesWritten(sql)),
      hiddenPrefix: template.analysis.hiddenPrefix,
    };
  }

  private bucket(schema: SchemaView, policy: StatementPolicy): Bucket {
    const policyKey = (policy.allowWrites ? "w" : "r") + (policy.strict ? "s" : "-") + (policy.pushdown ? "p" : "-");
    let bySchema = this.buckets.get(policyKey);
    if (!bySchema) this.buckets.set(policyKey, (bySchema = new Map()));
    let bucket = bySchema.get(schema.key);
    if (!bucket) bySchema.set(schema.key, (bucket = { texts: new Map(), forms: new Map(), keys: new Map() }));
    return bucket;
  }

  private keep<T>(map: Map<string, T>, key: string, value: T): void {
    if (this.size >= this.capacity) this.evict();
    map.set(key, value);
    this.size++;
  }

  /** Drops the least recently used entry of the oldest bucket (schemas change rarely). */
  private evict(): void {
    for (const [policyKey, bySchema] of this.buckets) {
      for (const [schemaKey, bucket] of bySchema) {
        const map: Map<string, unknown> = bucket.texts.size > 0 ? bucket.texts : bucket.keys.size > 0 ? bucket.keys : bucket.forms;
        const oldest = map.keys().next();
        if (!oldest.done) {
          map.delete(oldest.value);
          this.size--;
        }
        if (bucket.texts.size === 0 && bucket.forms.size === 0 && bucket.keys.size === 0) bySchema.delete(schemaKey);
        if (bySchema.size === 0) this.buckets.delete(policyKey);
        return;
      }
    }
  }
}

/** Outside the Basic Multilingual Plane, JavaScript's string positions are not PostgreSQL's character positions. */
const surrogate = /[\uD800-\uDFFF]/;

/**
 * A form's analysis as a template for every text of that form, or null when it does not hold
 * whatever the constants are: every statement a plain SELECT, none refused, and the text sent
 * the form itself or the form with hidden columns inserted (nothing of it replaced).
 */
function templateOf(analysis: QueryAnalysis, form: string): Template | null {
  const plain = analysis.refusal === undefined && analysis.statements.length > 0 && analysis.statements.every((statement) => statement.kind === "rows");
  if (!plain) return null;
  if (analysis.insertions.length === 0) return analysis.text === form ? { analysis, edits: [] } : null;
  if (surrogate.test(analysis.text) || analysis.insertions.some((insertion) => insertion.replaced !== undefined)) return null;
  const edits: Template["edits"] = [];
  let shift = 0;
  let rest = "";
  let from = 0;
  for (const insertion of analysis.insertions) {
    rest += analysis.text.slice(from, insertion.at);
    edits.push({ at: insertion.at - shift, text: analysis.text.slice(insertion.at, insertion.at + insertion.length) });
    shift += insertion.length;
    from = insertion.at + insertion.length;
  }
  rest += analysis.text.slice(from);
  // The insertions account for every difference from the form.
  return rest === form ? { analysis, edits } : null;
}

/**
 * `sql` with the template's hidden columns inserted where they stand in its form, and the
 * insertions' positions in the result; undefined when that text does not normalize to exactly
 * the spliced form (the places were not found again: the text is analysed itself).
 */
function spliceLikeForm(sql: string, form: string, template: Template): Pick<QueryAnalysis, "text" | "insertions"> | undefined {
  if (surrogate.test(sql)) return undefined;
  const parts = alignedParts(sql, form);
  if (!parts) return undefined;
  let text = "";
  let from = 0;
  const insertions: QueryAnalysis["insertions"] = [];
  for (const edit of template.edits) {
    const part = parts.find((p) => p.form <= edit.at && edit.at <= p.form + p.length);
    if (!part) return undefined;
    const at = part.sql + (edit.at - part.form);
    if (at < from) return undefined;
    text += sql.slice(from, at);
    insertions.push({ at: text.length, length: edit.text.length });
    text += edit.text;
    from = at;
  }
  text += sql.slice(from);
  let normalized: string;
  try {
    normalized = postgresParser().normalizeSync(text);
  } catch {
    return undefined;
  }
  return normalized === template.analysis.text ? { text, insertions } : undefined;
}

const parameter = /\$\d+/g;

/**
 * Whether `form` is `sql` with some spans each replaced by a `$n`: its parts between parameters
 * appear in `sql` in order, the first at the start and the last at the end. libpg-query returns
 * an error text (invalid UTF-8, for one) as if it were the form; this keeps it from being analysed.
 */
export function spansReplaced(sql: string, form: string): boolean {
  return alignedParts(sql, form) !== undefined;
}

/** Where each part of `form` between its parameters stands in `sql` (first match in order), when `form` is `sql` with spans replaced (see spansReplaced). */
function alignedParts(sql: string, form: string): Array<{ form: number; sql: number; length: number }> | undefined {
  const parts: Array<{ form: number; sql: number; length: number }> = [];
  let at = 0;
  let from = 0;
  parameter.lastIndex = 0;
  for (let match = parameter.exec(form); match !== null; match = parameter.exec(form)) {
    const part = form.slice(from, match.index);
    const found = from === 0 ? (sql.startsWith(part) ? 0 : -1) : sql.indexOf(part, at);
    if (found < 0) return undefined;
    parts.push({ form: from, sql: found, length: part.length });
    // Something of the client's text stands where the parameter is.
    at = found + part.length + 1;
    from = match.index + match[0].length;
  }
  if (from === 0) return undefined;
  const last = form.slice(from);
  if (sql.length - last.length < at || !sql.endsWith(last)) return undefined;
  parts.push({ form: from, sql: sql.length - last.length, length: last.length });
  return parts;
}

/** The analyses of this process's sessions (every export's: the key holds the schema and policy). */
export const sharedAnalyses = new AnalysisCache();
