// AssemblyScript (compiled to WebAssembly by scripts/build-wasm.mjs, not by tsc): the CSV
// engine's fast path. It finds the fields of the regular rows of a block 64 bytes at a time
// with SIMD compares, and stops at the start of the first row it cannot vouch for (a quote,
// CR or field count the JS scanner might refuse, a row over the size limit, the unfinished
// end). redaction/csv-rows.ts scans on from there: every refusal and every edge case is its
// rule alone, so the two cannot disagree on what a document means.
//
// Memory is laid out by the caller (redaction/csv-structure.ts): the input at `input`, with a
// LF at input - 1 (a row starts at the input's start) and zero bytes for 64 bytes after its
// end; the fields' bounds, pairs of i32, at `bounds`; seven i32 results at `result`.

const quote = i8x16.splat(0x22);
const comma = i8x16.splat(0x2c);
const lineFeed = i8x16.splat(0x0a);
const carriageReturn = i8x16.splat(0x0d);

/** Where the caller may put its data: past this module's own. */
export function dataStart(): usize {
  return (__heap_base + 63) & ~63;
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
