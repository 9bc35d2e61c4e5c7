// AssemblyScript (compiled to WebAssembly by scripts/build-wasm.mjs, not by tsc): the CSV
// engine's fast path. It finds the fields of the regular rows of a block 64 bytes at a time
// with SIMD compares, and stops at the start of the first row it cannot vouch for (a quote,
// CR or field count the JS scanner might refuse, a row over the size limit, the unfinished
// end). redaction/csv-rows.ts scans on from there: every refusal and every edge case is its
// rule alone, so the two cannot disagree on what a document means.
//
// Memory is laid out by the caller (redaction/csv-structure.ts): the input at `input`, with a
// LF at input - 1 (a row starts at the input's start) and zero bytes for 64 bytes after its
// end; the fields' bounds, pairs of i32, at `bounds`; seven i32 results at `result`. The
// user-id table of the rows' work (below) lies before `dataStart()`; the rest of the rows' work
// uses regions the caller lays out after the bounds (redaction/csv-row-engine.ts).

const quote = i8x16.splat(0x22);
const comma = i8x16.splat(0x2c);
const lineFeed = i8x16.splat(0x0a);
const carriageReturn = i8x16.splat(0x0d);

/** Where the caller may put its data: past this module's own and the user-id table's (below). */
export function dataStart(): usize {
  return ((__heap_base + 63) & ~63) + tableBytes;
}

/** Bit i set where byte i of the 64 at `at` equals `byte` (splatted). */
function mask64(at: usize, byte: v128): u64 {
  const a = <u64>i8x16.bitmask(i8x16.eq(v128.load(at), byte));
  const b = <u64>i8x16.bitmask(i8x16.eq(v128.load(at, 16), byte));
  const c = <u64>i8x16.bitmask(i8x16.eq(v128.load(at, 32), byte));
  const d = <u64>i8x16.bitmask(i8x16.eq(v128.load(at, 48), byte));
  return a | (b << 16) | (c << 32) | (d << 48);
}

/** Bit i: the XOR of bits 0..i (set from an opening quote up to, not including, its closing quote). */
function prefixXor(x: u64): u64 {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

/** Bits 0..bit set. */
function through(bit: u64): u64 {
  return bit === 63 ? ~(<u64>0) : ((<u64>1) << (bit + 1)) - 1;
}

/**
 * Scans `length` bytes at `input` from a row start. `columns` is the rows' field count (0: the
 * first row sets it). Positions written are offsets in the input plus `base`. Results at `result`:
 * rows, fields, where the scanned rows end (relative to the input), the line feeds before that,
 * empty lines, columns, whether it stopped at a row before the input's last byte.
 */
export function scan(input: usize, length: i32, base: i32, columns: i32, maxRecordBytes: i32, bounds: usize, result: usize): void {
  let rows = 0;
  let fields = 0;
  let emptyLines = 0;
  let rowStart = 0;
  let fieldStart = 0;
  let rowFields = 0;
  let end = 0;
  let endLines = 0;
  let lineFeeds = 0;
  let inQuotes: u64 = 0;
  // The byte before the input is a LF: the first field starts a row.
  let previousSeparator: u64 = 1;
  let previousQuote: u64 = 0;
  let stopped = false;
  for (let word = 0; word < length && !stopped; word += 64) {
    const at = input + <usize>word;
    const q = mask64(at, quote);
    const c = mask64(at, comma);
    const lf = mask64(at, lineFeed);
    const cr = mask64(at, carriageReturn);
    const following = load<u8>(at, 64);
    const nextQuote = (q >> 1) | ((<u64>(following === 0x22)) << 63);
    const nextComma = (c >> 1) | ((<u64>(following === 0x2c)) << 63);
    const nextLineFeed = (lf >> 1) | ((<u64>(following === 0x0a)) << 63);
    const nextCarriageReturn = (cr >> 1) | ((<u64>(following === 0x0d)) << 63);
    const inside = prefixXor(q) ^ inQuotes;
    inQuotes = <u64>(<i64>inside >> 63);
    const opening = q & inside;
    const closing = q & ~inside;
    const separators = c | lf;
    // What the JS scanner might refuse: an opening quote not at a field's start (nor doubling a
    // closing one), a closing quote not followed by a separator, a CR or another quote, a CR
    // outside quotes not followed by a LF. The last byte's follower is zero past the input's end,
    // so what ends it is left to the JS scanner too.
    const suspect =
      (opening & ~((separators << 1) | previousSeparator | (q << 1) | previousQuote)) |
      (closing & ~(nextQuote | nextComma | nextLineFeed | nextCarriageReturn)) |
      (cr & ~inside & ~nextLineFeed);
    previousSeparator = separators >> 63;
    previousQuote = q >> 63;
    let found = separators & ~inside;
    if (suspect !== 0) found &= ((<u64>1) << ctz(suspect)) - 1;
    while (found !== 0) {
      const bit = ctz(found);
      found &= found - 1;
      const position = word + <i32>bit;
      if (((c >> bit) & 1) !== 0) {
        store<i32>(bounds + ((<usize>fields) << 3), fieldStart + base);
        store<i32>(bounds + ((<usize>fields) << 3), position + base, 4);
        fields++;
        rowFields++;
        fieldStart = position + 1;
        continue;
      }
      const afterCr = load<u8>(input + <usize>position - 1) === 0x0d;
      if (rowFields === 0 && (position === rowStart || (position === rowStart + 1 && afterCr))) {
        emptyLines++;
      } else {
        store<i32>(bounds + ((<usize>fields) << 3), fieldStart + base);
        store<i32>(bounds + ((<usize>fields) << 3), (afterCr ? position - 1 : position) + base, 4);
        fields++;
        rowFields++;
        if (columns === 0) columns = rowFields;
        // Left to the JS scanner, which refuses it (its fields are not counted below).
        if (rowFields !== columns || position + 1 - rowStart > maxRecordBytes) {
          stopped = true;
          break;
        }
        rows++;
      }
      rowStart = position + 1;
      fieldStart = rowStart;
      rowFields = 0;
      end = rowStart;
      endLines = lineFeeds + <i32>popcnt(lf & through(bit));
    }
    if (suspect !== 0) {
      // A suspect last byte only waits for its follower (the next slice has it): not a stop.
      stopped = word + <i32>ctz(suspect) < length - 1;
      break;
    }
    lineFeeds += <i32>popcnt(lf);
  }
  store<i32>(result, rows);
  store<i32>(result, fields - rowFields, 4);
  store<i32>(result, end, 8);
  store<i32>(result, endLines, 12);
  store<i32>(result, emptyLines, 16);
  store<i32>(result, rows > 0 ? columns : 0, 20);
  store<i32>(result, stopped ? 1 : 0, 24);
}

// ---- The per-row work of the regular rows, after the scan (redaction/csv-row-engine.ts) ----
//
// A table kept in this module's memory maps a raw user-id field (its bytes as they are in the
// document, quotes and all) and a document tag to what JS found it to be: a verdict number,
// "names no one", "decodes to nothing" (the next user-id column is read), or not yet known.
// JS decides every value (it decodes the field and checks the id); this module only looks the
// bytes up again, byte for byte, so that a row costs a hash and a compare, not a string.

/** What a table entry says of its field (verdicts are 0 and up). */
const noOne = -1;
const emptyText = -2;
/** Not classified by JS yet: listed to JS once per call. */
const unknown = -3;
/** Names a user whose verdict JS does not have yet: its rows wait. */
const undecided = -4;
/** A row's code for "its user is undecided": undecidedRow - entry. */
const undecidedRow = -16;

/** Fields longer than this are not kept in the table (an id is at most 200 characters): the block goes the JS way. */
const maxKeyBytes = 256;
const maxEntries = 1 << 19;
const maxSlots = 1 << 20;
const arenaBytes = 16 << 20;
const entryBytes = 24;
const firstSlots = 4096;
const tableBytes = ((<usize>maxSlots) << 3) + <usize>maxEntries * entryBytes + <usize>arenaBytes;

/** Slots: (generation, entry), a slot of another generation is free; entries: hash, tag, key offset, key length, value, stamp. */
let slotCount: i32 = firstSlots;
let generation: i32 = 1;
let entryCount: i32 = 0;
let arenaUsed: i32 = 0;
let stamp: i32 = 0;

function slotsAt(): usize {
  return (__heap_base + 63) & ~63;
}

function entriesAt(): usize {
  return slotsAt() + ((<usize>maxSlots) << 3);
}

function arenaAt(): usize {
  return entriesAt() + <usize>maxEntries * entryBytes;
}

function entryAt(entry: i32): usize {
  return entriesAt() + <usize>entry * entryBytes;
}

/** FNV-1a of the bytes and the tag, then murmur3's finaliser so that the low bits (the slot) spread. */
export function hashOf(at: usize, length: i32, tag: i32): u32 {
  let h: u32 = 0x811c9dc5 ^ (<u32>tag * 0x9e3779b1);
  for (let i = 0; i < length; i++) h = (h ^ load<u8>(at + <usize>i)) * 0x01000193;
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

function sameBytes(a: usize, b: usize, length: i32): bool {
  for (let i = 0; i < length; i++) if (load<u8>(a + <usize>i) !== load<u8>(b + <usize>i)) return false;
  return true;
}

/** The entry of these bytes under `tag`, or -1 - the free slot where it would go. A hash alone never matches: the bytes are compared. */
function find(h: u32, tag: i32, key: usize, length: i32): i32 {
  const mask = slotCount - 1;
  let slot = <i32>h & mask;
  while (load<i32>(slotsAt() + ((<usize>slot) << 3)) === generation) {
    const entry = load<i32>(slotsAt() + ((<usize>slot) << 3), 4);
    const e = entryAt(entry);
    if (load<u32>(e) === h && load<i32>(e, 4) === tag && load<i32>(e, 12) === length && sameBytes(arenaAt() + <usize>load<i32>(e, 8), key, length))
      return entry;
    slot = (slot + 1) & mask;
  }
  return -1 - slot;
}

function place(slot: i32, entry: i32): void {
  const at = slotsAt() + ((<usize>slot) << 3);
  store<i32>(at, generation);
  store<i32>(at, entry, 4);
}

/** A new entry (not yet classified) for bytes not in the table, in the free slot `find` gave. */
function insert(slot: i32, h: u32, tag: i32, key: usize, length: i32): i32 {
  const entry = entryCount++;
  const e = entryAt(entry);
  store<u32>(e, h);
  store<i32>(e, tag, 4);
  store<i32>(e, arenaUsed, 8);
  store<i32>(e, length, 12);
  store<i32>(e, unknown, 16);
  store<i32>(e, 0, 20);
  memory.copy(arenaAt() + <usize>arenaUsed, key, <usize>length);
  arenaUsed += length;
  place(slot, entry);
  // At most half the slots in use: past that, twice the slots, every entry placed again.
  if (entryCount * 2 > slotCount && slotCount < maxSlots) {
    slotCount <<= 1;
    generation++;
    const mask = slotCount - 1;
    for (let other = 0; other < entryCount; other++) {
      let s = <i32>load<u32>(entryAt(other)) & mask;
      while (load<i32>(slotsAt() + ((<usize>s) << 3)) === generation) s = (s + 1) & mask;
      place(s, other);
    }
  }
  return entry;
}

/** Whether `entries` more entries (at most `limit` in all) and `keyBytes` more key bytes fit: JS empties the table before a block that might not. */
export function tableFits(entries: i32, keyBytes: i32, limit: i32): bool {
  return entryCount + entries <= min(limit, maxEntries) && arenaUsed + keyBytes <= arenaBytes;
}

/** Forgets every entry. */
export function clearTable(): void {
  generation++;
  slotCount = firstSlots;
  entryCount = 0;
  arenaUsed = 0;
}

/** What JS found an entry's field to be (a verdict, noOne, emptyText, undecided), or unknown again. */
export function setEntry(entry: i32, value: i32): void {
  store<i32>(entryAt(entry), value, 16);
  store<i32>(entryAt(entry), 0, 20);
}

/**
 * The user of each of `rows` rows (fields' bounds at `bounds`, positions that are offsets from
 * `inputBase`): the first user-id column whose field is not empty and does not decode to nothing.
 * Writes an i32 per row at `rowCodes`: a verdict, noOne, unknown, or undecidedRow - entry.
 * Fields not in the table are added (unknown) and listed at `listed` as (entry, start, end),
 * each once per call. Results at `result`: the number listed; 1 if a field was too long for the
 * table (nothing else is then valid).
 */
export function classify(
  inputBase: usize,
  bounds: usize,
  rows: i32,
  columns: i32,
  userColumns: usize,
  userColumnCount: i32,
  tag: i32,
  rowCodes: usize,
  listed: usize,
  result: usize,
): void {
  stamp++;
  let count = 0;
  for (let r = 0; r < rows; r++) {
    let code = noOne;
    for (let u = 0; u < userColumnCount; u++) {
      const field = bounds + ((<usize>(r * columns + load<i32>(userColumns + ((<usize>u) << 2)))) << 3);
      const start = load<i32>(field);
      const end = load<i32>(field, 4);
      if (end <= start) continue;
      const length = end - start;
      if (length > maxKeyBytes) {
        store<i32>(result, count);
        store<i32>(result, 1, 4);
        return;
      }
      const key = inputBase + <usize>start;
      const h = hashOf(key, length, tag);
      let entry = find(h, tag, key, length);
      if (entry < 0) entry = insert(-1 - entry, h, tag, key, length);
      const e = entryAt(entry);
      const value = load<i32>(e, 16);
      if (value === emptyText) continue;
      if (value === unknown) {
        if (load<i32>(e, 20) !== stamp) {
          store<i32>(e, stamp, 20);
          const at = listed + <usize>count * 12;
          store<i32>(at, entry);
          store<i32>(at, start, 4);
          store<i32>(at, end, 8);
          count++;
        }
        code = unknown;
      } else code = value === undecided ? undecidedRow - entry : value;
      break;
    }
    store<i32>(rowCodes + ((<usize>r) << 2), code);
  }
  store<i32>(result, count);
  store<i32>(result, 0, 4);
}

/** Copies `length` bytes 16 at a time (both sides have 16 bytes to spare past the end), long spans natively. */
function copy(to: usize, from: usize, length: i32): void {
  if (length > 128) {
    memory.copy(to, from, <usize>length);
    return;
  }
  for (let i = 0; i < length; i += 16) v128.store(to + <usize>i, v128.load(from + <usize>i));
}

/**
 * Writes the rows whose codes `classify` gave (every one a verdict or noOne) as csv-rows'
 * writeRows does: a kept row's kept fields byte for byte, the others empty, then the
 * terminator (1 or 2 bytes, little-endian in `terminator`). A verdict is `columns` + 1 bytes at
 * `verdicts` + id * (columns + 1): allowed, then keep per column. Counts (i32): rows without a
 * user, then rows per verdict. Result: the bytes written, or -1 for a row without a verdict
 * (fail closed: nothing is to be used).
 */
export function writeRows(
  inputBase: usize,
  bounds: usize,
  rows: i32,
  columns: i32,
  rowCodes: usize,
  verdicts: usize,
  verdictCount: i32,
  counts: usize,
  terminator: i32,
  terminatorLength: i32,
  out: usize,
  result: usize,
): void {
  memory.fill(counts, 0, (<usize>(verdictCount + 1)) << 2);
  const stride = columns + 1;
  let at = out;
  for (let r = 0; r < rows; r++) {
    const code = load<i32>(rowCodes + ((<usize>r) << 2));
    if (code === noOne) {
      store<i32>(counts, load<i32>(counts) + 1);
      continue;
    }
    if (code < 0 || code >= verdictCount) {
      store<i32>(result, -1);
      return;
    }
    const counter = counts + ((<usize>code + 1) << 2);
    store<i32>(counter, load<i32>(counter) + 1);
    const verdict = verdicts + <usize>(code * stride);
    if (load<u8>(verdict) === 0) continue;
    const keep = verdict + 1;
    const row = bounds + ((<usize>(r * columns)) << 3);
    for (let c = 0; c < columns; c++) {
      if (c > 0) store<u8>(at++, 0x2c);
      if (load<u8>(keep + <usize>c) === 0) continue;
      // A run of kept fields is one copy: in the input they are separated by single commas too.
      let last = c;
      while (last + 1 < columns && load<u8>(keep + <usize>(last + 1)) === 1) last++;
      const start = load<i32>(row + ((<usize>c) << 3));
      const end = load<i32>(row + ((<usize>last) << 3), 4);
      copy(at, inputBase + <usize>start, end - start);
      at += <usize>(end - start);
      c = last;
    }
    store<u8>(at++, <u8>terminator);
    if (terminatorLength === 2) store<u8>(at++, <u8>(terminator >> 8));
  }
  store<i32>(result, <i32>(at - out));
}
