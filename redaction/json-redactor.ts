import { fieldOutcome, FieldReachedTwice, RecordShapeError, userIdOf, walksInto, type RecordPlan } from "../decision/record-redaction";
import { JsonByte, JsonDepthError, skipWhitespace, stringEnd, valueEnd } from "./json-scan";
import { ChunkedRedactor, emptyBuffer } from "./chunked-redactor";
import { DocumentError, documentLimits, type DecisionSource } from "./types";

const nullBytes = Buffer.from("null");

/** A growable output buffer. */
class ByteSink {
  private buf = Buffer.allocUnsafe(64 * 1024);
  length = 0;

  private room(bytes: number): void {
    if (this.length + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + bytes));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }

  byte(value: number): void {
    this.room(1);
    this.buf[this.length++] = value;
  }

  copy(source: Buffer, start: number, end: number): void {
    this.room(end - start);
    this.length += source.copy(this.buf, this.length, start, end);
  }

  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.length));
    this.length = 0;
    return out;
  }
}

/** One record found in the input: its byte range and where it is, for errors. */
interface Found {
  start: number;
  end: number;
  /** 1-based record number (array element) or line number (NDJSON). */
  at: number;
}

type Framing = "array" | "lines";

/**
 * JSON document redaction: an array of objects (`application/json`) or one object per line
 * (`application/x-ndjson`). Each record is checked for depth on its bytes, parsed (which
 * validates it; keys become own properties, so `__proto__` is just a key) to find its user,
 * then written out from its own bytes: kept values byte for byte (numbers keep every digit),
 * emptied ones as `null`, objects the mapping does not name walked into (dotted paths).
 */
export class JsonRedactor extends ChunkedRedactor {
  private state: "open" | "element" | "after" | "closed" = "open";
  private records = 0;
  private line = 1;
  private anyOut = false;
  private readonly sink = new ByteSink();

  constructor(
    plan: RecordPlan,
    decisions: DecisionSource,
    private readonly framing: Framing,
  ) {
    super(plan, decisions);
  }

  protected finish(): void {
    if (this.framing === "array" && this.state !== "closed") {
      throw new DocumentError(
        "JSON_INCOMPLETE",
        this.state === "open" ? "the document is not a JSON array" : `the JSON array is not closed (after record ${this.records})`,
        { record: this.records },
      );
    }
  }

  protected async process(buf: Buffer, start: number, final: boolean): Promise<Buffer> {
    const found: Found[] = [];
    const carryFrom = this.framing === "array" ? this.findElements(buf, start, final, found) : this.findLines(buf, start, final, found);
    const tooLarge = (at: number) =>
      new DocumentError("RECORD_TOO_LARGE", `${this.label(at)} is longer than ${documentLimits.maxRecordBytes} bytes`, this.where(at));
    if (buf.length - carryFrom > documentLimits.maxRecordBytes) throw tooLarge(this.framing === "array" ? this.records + 1 : this.line);
    for (const record of found) if (record.end - record.start > documentLimits.maxRecordBytes) throw tooLarge(record.at);
    this.carry = carryFrom < buf.length ? Buffer.from(buf.subarray(carryFrom)) : emptyBuffer;
    return this.redact(buf, found);
  }

  private depthChecked(buf: Buffer, start: number, final: boolean, end: number, at: number): number {
    try {
      return valueEnd(buf, start, documentLimits.maxDepth, final, end);
    } catch (error) {
      if (error instanceof JsonDepthError) throw new DocumentError("RECORD_TOO_DEEP", `${this.label(at)} ${error.message}`, this.where(at));
      throw error;
    }
  }

  /** How errors name a record: by its number in an array, by its line in NDJSON. */
  private label(at: number): string {
    return this.framing === "array" ? `record ${at}` : `the record on line ${at}`;
  }

  private where(at: number): { line?: number; record?: number } {
    return this.framing === "array" ? { record: at } : { line: at };
  }

  /** Elements of the top-level array; returns where the unfinished rest starts. */
  private findElements(buf: Buffer, pos: number, final: boolean, found: Found[]): number {
    const n = buf.length;
    for (;;) {
      const p = skipWhitespace(buf, pos);
      if (p === n) return p;
      const byte = buf[p];
      switch (this.state) {
        case "open":
          if (byte !== JsonByte.OpenBracket) throw new DocumentError("JSON_NOT_ARRAY", "a JSON document must be an array of objects", { record: 0 });
          this.state = "element";
          this.sink.byte(JsonByte.OpenBracket);
          pos = p + 1;
          break;
        case "element": {
          if (byte === JsonByte.CloseBracket && this.records === 0) {
            this.state = "closed";
            pos = p + 1;
            break;
          }
          const at = this.records + 1;
          if (byte === JsonByte.CloseBracket)
            throw new DocumentError("JSON_INVALID", `a comma after record ${this.records} is followed by the end of the array`, { record: this.records });
          if (byte !== JsonByte.OpenBrace) throw new DocumentError("JSON_NOT_OBJECT", `record ${at} is not an object`, { record: at });
          const end = this.depthChecked(buf, p, final, n, at);
          if (end === -1) return p;
          this.records = at;
          found.push({ start: p, end, at });
          this.state = "after";
          pos = end;
          break;
        }
        case "after":
          if (byte === JsonByte.Comma) this.state = "element";
          else if (byte === JsonByte.CloseBracket) this.state = "closed";
          else throw new DocumentError("JSON_INVALID", `expected ',' or ']' after record ${this.records}`, { record: this.records });
          pos = p + 1;
          break;
        case "closed":
          throw new DocumentError("JSON_INVALID", "text follows the end of the JSON array", { record: this.records });
      }
    }
  }

  /** Non-blank lines; returns where the unfinished last line starts. */
  private findLines(buf: Buffer, pos: number, final: boolean, found: Found[]): number {
    const n = buf.length;
    while (pos < n) {
      let lineEnd = buf.indexOf(JsonByte.LF, pos);
      if (lineEnd === -1) {
        if (!final) return pos;
        lineEnd = n;
      }
      const at = this.line++;
      const start = skipWhitespace(buf, pos, lineEnd);
      if (start === lineEnd) {
        this.counts.emptyLines++;
      } else {
        if (buf[start] !== JsonByte.OpenBrace) throw new DocumentError("JSON_NOT_OBJECT", `the record on line ${at} is not an object`, { line: at });
        const end = this.depthChecked(buf, start, true, lineEnd, at);
        if (end === -1 || skipWhitespace(buf, end, lineEnd) !== lineEnd)
          throw new DocumentError("JSON_INVALID", `line ${at} is not one JSON object`, { line: at });
        this.records++;
        found.push({ start, end, at });
      }
      pos = lineEnd + 1;
    }
    return n;
  }

  private async redact(buf: Buffer, found: Found[]): Promise<Buffer> {
    const userIds: Array<string | undefined> = found.map(({ start, end, at }) => {
      let record: unknown;
      try {
        record = JSON.parse(buf.toString("utf8", start, end));
      } catch (error) {
        throw new DocumentError("JSON_INVALID", `${this.label(at)} is not valid JSON: ${(error as Error).message}`, this.where(at));
      }
      try {
        return userIdOf(record, this.plan, (keys) => integerLiteral.test(rawValueAt(buf, start, keys) ?? ""));
      } catch (error) {
        // Before anything is decided: a record with one field reached two ways is refused whether its user is allowed or not.
        if (error instanceof FieldReachedTwice) throw new DocumentError("JSON_DUPLICATE_KEY", `${this.label(at)} ${error.problem}`, this.where(at));
        if (error instanceof RecordShapeError) throw new DocumentError("RECORD_TOO_DEEP", `${this.label(at)}: ${error.message}`, this.where(at));
        throw error;
      }
    });
    await this.decisions.prepare(userIds.filter((id): id is string => id !== undefined));
    const { sink } = this;
    found.forEach(({ start, at }, index) => {
      this.counts.rowsIn++;
      const userId = userIds[index];
      if (userId === undefined) return this.counts.drop("NO_USER_ID");
      const decision = this.decisions.of(userId);
      if (!decision.allowed) return this.counts.drop(decision.reason);
      this.counts.rowsKept++;
      if (this.framing === "array") {
        if (this.anyOut) sink.byte(JsonByte.Comma);
        sink.byte(JsonByte.LF);
      }
      this.anyOut = true;
      this.writeObject(buf, start, "", decision.categories, at);
      if (this.framing === "lines") sink.byte(JsonByte.LF);
    });
    if (this.framing === "array" && this.state === "closed" && !this.closedOut) {
      this.closedOut = true;
      if (this.anyOut) sink.byte(JsonByte.LF);
      sink.byte(JsonByte.CloseBracket);
      sink.byte(JsonByte.LF);
    }
    return sink.take();
  }

  private closedOut = false;

  /** Writes the object at `start` redacted; returns where it ends. The record was validated by JSON.parse. */
  private writeObject(buf: Buffer, start: number, prefix: string, allowed: ReadonlySet<string>, at: number): number {
    const { sink } = this;
    sink.byte(JsonByte.OpenBrace);
    let first = true;
    const keys = new Set<string>();
    const close = eachMember(buf, start, (key, keyStart, keyEnd, valueStart, end) => {
      // A repeated key makes the record ambiguous (which one names the user?): refuse it.
      if (keys.has(key))
        throw new DocumentError("JSON_DUPLICATE_KEY", `${this.label(at)} has the key '${prefix ? `${prefix}.` : ""}${key}' twice`, this.where(at));
      keys.add(key);
      // A field reached two ways (`{"users.id": …, "users": {"id": …}}`) was refused before deciding (userIdOf).
      const path = prefix ? `${prefix}.${key}` : key;
      if (!first) sink.byte(JsonByte.Comma);
      first = false;
      sink.copy(buf, keyStart, keyEnd);
      sink.byte(JsonByte.Colon);
      if (walksInto(this.plan, path, buf[valueStart] === JsonByte.OpenBrace && buf[skipWhitespace(buf, valueStart + 1)] !== JsonByte.CloseBrace)) {
        this.writeObject(buf, valueStart, path, allowed, at);
      } else {
        const outcome = fieldOutcome(this.plan, allowed, path);
        const entry = this.counts.field(path);
        if (outcome.kept) {
          entry.kept++;
          sink.copy(buf, valueStart, end);
        } else {
          entry.emptied++;
          sink.copy(nullBytes, 0, nullBytes.length);
        }
      }
    });
    sink.byte(JsonByte.CloseBrace);
    return close + 1;
  }
}

/**
 * Calls `visit` with each member of the valid JSON object at `start`, in order: its key decoded, where the key's
 * text lies and where its value's does. Returns where the object's closing brace is.
 */
function eachMember(buf: Buffer, start: number, visit: (key: string, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => void): number {
  let p = skipWhitespace(buf, start + 1);
  while (buf[p] !== JsonByte.CloseBrace) {
    const keyEnd = stringEnd(buf, p);
    const key = JSON.parse(buf.toString("utf8", p, keyEnd)) as string;
    const valueStart = skipWhitespace(buf, skipWhitespace(buf, keyEnd) + 1);
    const end = valueEnd(buf, valueStart, Number.MAX_SAFE_INTEGER, true);
    visit(key, p, keyEnd, valueStart, end);
    p = skipWhitespace(buf, end);
    if (buf[p] === JsonByte.Comma) p = skipWhitespace(buf, p + 1);
  }
  return p;
}

/** A JSON number written as an integer (no fraction, no exponent): only such a number names a user. */
const integerLiteral = /^-?(?:0|[1-9][0-9]*)$/;

/**
 * The text of the value the keys lead to in the object at `start` (`["a.b", "id"]`: key `a.b`, then `id`:
 * the way the walk reached it, userIdOf), undefined when there is none. The object is valid JSON; of a key
 * repeated in one object the last is read, as JSON.parse keeps it.
 */
function rawValueAt(buf: Buffer, start: number, keys: readonly string[]): string | undefined {
  const member = (objectStart: number, wanted: string): { start: number; end: number } | undefined => {
    let found: { start: number; end: number } | undefined;
    eachMember(buf, objectStart, (key, _keyStart, _keyEnd, valueStart, end) => {
      if (key === wanted) found = { start: valueStart, end };
    });
    return found;
  };
  let at: { start: number; end: number } | undefined = { start, end: -1 };
  for (const key of keys) {
    if (buf[at.start] !== JsonByte.OpenBrace) return undefined;
    at = member(at.start, key);
    if (!at) return undefined;
  }
  return buf.toString("utf8", at.start, at.end);
}
