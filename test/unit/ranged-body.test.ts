import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { RangedReads } from "../../actors/export/export-actor";
import { BackendConnections } from "../../exports/backend-connections";
import { ObjectStore } from "../../proxies/objectstore/object-store";
import {
  discardStored,
  limitRangeMemory,
  type RangedStoreBody,
  rangedReadsOf,
  rangeMemory,
  rangeMemoryBytes,
  storedObject,
} from "../../proxies/objectstore/ranged-body";
import type { InputSink } from "../../redaction/direct-input";

/**
 * A store on loopback serving one object with Range (RFC 9110: 206 and Content-Range, 416 past the
 * end), whose bytes and ETag a test may change between requests or break per range.
 */
class RangeStore {
  bytes: Buffer;
  etag: string | undefined = '"v1"';
  /** Every request's headers, in the order they came. */
  readonly requests: IncomingHttpHeaders[] = [];
  /** Answers the range starting here as this says instead (`short`: fewer bytes than its Content-Length, then the connection closes). */
  readonly broken = new Map<number, "short" | "200" | "wrong-range" | "fewer-bytes" | "hang">();
  /** A GET without Range is answered 206 with the whole object (a store that should not). */
  partialToWhole = false;
  /** Ranges whose answers were cut by the reader going away (their connection closed before all was sent). */
  closedEarly = 0;
  ignoresRange = false;
  private constructor(
    readonly server: Server,
    bytes: Buffer,
  ) {
    this.bytes = bytes;
  }

  static async start(bytes: Buffer): Promise<RangeStore> {
    const server = createServer();
    const store = new RangeStore(server, bytes);
    server.on("request", (req, res) => store.answer(req.headers, res));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return store;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  private answer(headers: IncomingHttpHeaders, res: ServerResponse): void {
    this.requests.push(headers);
    res.on("close", () => {
      if (!res.writableFinished) this.closedEarly++;
    });
    const etag = this.etag ? { etag: this.etag } : {};
    const match = /^bytes=(\d+)-(\d+)$/.exec(headers.range ?? "");
    if (!match && this.partialToWhole) {
      res.writeHead(206, { "content-length": this.bytes.length, "content-range": `bytes 0-${this.bytes.length - 1}/${this.bytes.length}`, ...etag });
      res.end(this.bytes);
      return;
    }
    if (!match || this.ignoresRange) {
      res.writeHead(200, { "content-type": "text/csv", "content-length": this.bytes.length, ...etag }).end(this.bytes);
      return;
    }
    const start = Number(match[1]);
    if (start >= this.bytes.length) {
      res.writeHead(416, { "content-range": `bytes */${this.bytes.length}` }).end();
      return;
    }
    const end = Math.min(Number(match[2]), this.bytes.length - 1) - (this.broken.get(start) === "fewer-bytes" ? 1000 : 0);
    const part = this.bytes.subarray(start, end + 1);
    const broken = this.broken.get(start);
    if (broken === "200") {
      res.writeHead(200, { "content-type": "text/csv", "content-length": this.bytes.length, ...etag }).end(this.bytes);
      return;
    }
    const range = broken === "wrong-range" ? `bytes ${start + 1}-${end + 1}/${this.bytes.length}` : `bytes ${start}-${end}/${this.bytes.length}`;
    res.writeHead(206, { "content-type": "text/csv", "content-length": part.length, "content-range": range, ...etag });
    if (broken === "hang") return void res.write(part.subarray(0, 10));
    if (broken === "short") {
      res.write(part.subarray(0, part.length >> 1));
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    res.end(part);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A sink like the redactor's: rooms of 16 KiB, and every `stopEvery`th arrival asks the reader to stop (resumed on the next turn). */
class CollectingSink implements InputSink {
  private readonly pieces: Buffer[] = [];
  private arrivals = 0;
  outcome?: { error?: Error };
  readonly settled: Promise<void>;
  private settle!: () => void;
  input?: RangedStoreBody;

  constructor(private readonly stopEvery = Number.POSITIVE_INFINITY) {
    this.settled = new Promise((resolve) => (this.settle = resolve));
  }

  room(): Buffer {
    return Buffer.alloc(16 << 10);
  }

  arrived(bytes: Buffer): boolean {
    assert.equal(this.outcome, undefined, "nothing arrives after the end");
    this.pieces.push(Buffer.from(bytes));
    if (++this.arrivals % this.stopEvery !== 0) return true;
    setImmediate(() => this.input?.resume());
    return false;
  }

  ended(error?: Error): void {
    assert.equal(this.outcome, undefined, "ended once");
    this.outcome = { error };
    this.settle();
  }

  bytes(): Buffer {
    return Buffer.concat(this.pieces);
  }
}

/** Distinct bytes at every offset (a misplaced or repeated range shows). */
function object(length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i + 4 <= length; i += 4) bytes.writeUInt32BE(i, i);
  return bytes;
}

const small: RangedReads = { parallel: 3, rangeBytes: 64 << 10 };

/** The export's client of the store on `port`, unsigned, its connections on an audit log that stores every record. */
function storeClient(port: number): ObjectStore {
  const endpoint = new URL(`http://127.0.0.1:${port}`);
  return new ObjectStore(
    endpoint,
    undefined,
    new BackendConnections({ exportId: "ranged", component: "objectstore", endpoint, storedAudit: async () => true }),
  );
}

/** Reads the store's object as a GetObject does: storedObject, then the ranges through a RangedStoreBody into `sink`. */
async function read(store: RangeStore, sink: CollectingSink, reads = small, signal = new AbortController().signal) {
  const client = storeClient(store.port);
  const first = await storedObject(client, "/docs/doc.csv", reads, signal);
  const body = first.ranged;
  assert.ok(body, "read in ranges");
  sink.input = body;
  body.readInto(sink);
  body.resume();
  return { body, client, first };
}

describe("ranged reads of a stored object (proxies/objectstore/ranged-body.ts)", () => {
  test("the ranges come back in the object's order, each asked with If-Match, whatever order they arrive in and however often the sink stops", async () => {
    const bytes = object((1 << 20) + 12_345);
    const store = await RangeStore.start(bytes);
    try {
      for (const stopEvery of [Number.POSITIVE_INFINITY, 3]) {
        store.requests.length = 0;
        const sink = new CollectingSink(stopEvery);
        const { client, first } = await read(store, sink);
        assert.equal(first.length, bytes.length);
        await sink.settled;
        client.close();
        assert.equal(sink.outcome?.error, undefined);
        assert.ok(sink.bytes().equals(bytes), `the object's ${bytes.length} bytes in order (got ${sink.bytes().length})`);
        assert.equal(rangeMemory.held, 0, "every range's bytes given back");
        const ranges = store.requests.map((headers) => headers.range);
        assert.equal(ranges.length, Math.ceil(bytes.length / small.rangeBytes));
        assert.equal(new Set(ranges).size, ranges.length, "each range asked for once");
        assert.equal(store.requests[0]!["if-match"], undefined, "the first GET names no version yet");
        assert.ok(
          store.requests.slice(1).every((headers) => headers["if-match"] === '"v1"'),
          "every later range is asked for the first one's version",
        );
      }
    } finally {
      await store.stop();
    }
  });

  test("an object changed while it is read fails the body: ranges of two versions are never joined", async () => {
    const bytes = object(512 << 10);
    const store = await RangeStore.start(bytes);
    try {
      // The store ignores If-Match (s3rver does): the ETag of each answer is what is checked.
      const sink = new CollectingSink(1);
      const { client } = await read(store, sink, { parallel: 2, rangeBytes: 64 << 10 });
      store.bytes = object(512 << 10).fill(0x41, 100_000);
      store.etag = '"v2"';
      await sink.settled;
      client.close();
      assert.match(String(sink.outcome?.error?.message), /changed while it was read/);
      assert.ok(sink.bytes().length < bytes.length, "the body is not complete");
      assert.ok(!sink.bytes().includes(Buffer.alloc(4, 0x41)), "no byte of the second version was handed on");
    } finally {
      await store.stop();
    }
  });

  for (const [kind, problem] of [
    ["short", /ended after|cut off|aborted|socket hang up/],
    ["200", /answered 200/],
    ["wrong-range", /Content-Range/],
  ] as const)
    test(`a range the store answers ${kind === "short" ? "short" : kind === "200" ? "with the whole object (200)" : "with another Content-Range"} fails the body, handing on nothing past it`, async () => {
      const bytes = object(8 * (64 << 10));
      const store = await RangeStore.start(bytes);
      try {
        store.broken.set(3 * (64 << 10), kind);
        const sink = new CollectingSink();
        const { client } = await read(store, sink);
        await sink.settled;
        client.close();
        assert.match(String(sink.outcome?.error?.message), problem);
        // A short range's bytes are the object's (its answer was checked to be the range asked for) and may stream on before it ends short; an answer that is not the range asked for gives nothing.
        const handedOn = kind === "short" ? 3 * (64 << 10) + (32 << 10) : 3 * (64 << 10);
        assert.ok(sink.bytes().length <= handedOn, `nothing past ${handedOn} bytes (${sink.bytes().length})`);
        assert.ok(sink.bytes().equals(bytes.subarray(0, sink.bytes().length)), "what was handed on is the object's start");
        assert.equal(rangeMemory.held, 0, "every range's bytes given back");
      } finally {
        await store.stop();
      }
    });

  test("the client going away (the request's signal) and destroy stop every range's request", async () => {
    const bytes = object(8 * (64 << 10));
    const store = await RangeStore.start(bytes);
    try {
      store.broken.set(64 << 10, "hang");
      store.broken.set(2 * (64 << 10), "hang");
      const abort = new AbortController();
      const sink = new CollectingSink();
      const { client } = await read(store, sink, small, abort.signal);
      const deadline = Date.now() + 5000;
      while (store.requests.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      abort.abort();
      await sink.settled;
      assert.match(String(sink.outcome?.error?.message), /client's request ended/);
      while (store.closedEarly < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(store.closedEarly, 2, "both hanging ranges' connections were closed");
      assert.equal(rangeMemory.held, 0, "every range's bytes given back");
      client.close();
    } finally {
      await store.stop();
    }
  });

  test("storedObject reads the object whole where ranges cannot be tied to one version, or are not needed", async () => {
    const bytes = object(256 << 10);
    const store = await RangeStore.start(bytes);
    const client = storeClient(store.port);
    const signal = new AbortController().signal;
    try {
      const cases: Array<[string, () => void, RangedReads]> = [
        ["parallel 1", () => undefined, { parallel: 1, rangeBytes: 64 << 10 }],
        ["no ETag", () => (store.etag = undefined), small],
        ["a weak ETag", () => (store.etag = 'W/"v1"'), small],
        ["a store that ignores Range", () => (store.ignoresRange = true), small],
        ["an object within one range", () => undefined, { parallel: 3, rangeBytes: 1 << 20 }],
        ["a first range shorter than asked", () => store.broken.set(0, "fewer-bytes"), small],
        ["a node holding its range bytes already", () => (rangeMemory.held = rangeMemoryBytes - small.rangeBytes + 1), small],
        ["a node whose bound (OBJECTSTORE_RANGE_MEMORY_BYTES) is below one range", () => limitRangeMemory(small.rangeBytes - 1), small],
      ];
      for (const [name, arrange, reads] of cases) {
        store.etag = '"v1"';
        store.ignoresRange = false;
        store.broken.clear();
        rangeMemory.held = 0;
        limitRangeMemory(rangeMemoryBytes);
        arrange();
        const stored = await storedObject(client, "/docs/doc.csv", reads, signal);
        assert.equal(stored.ranged, undefined, `${name}: one answer`);
        assert.equal(stored.answer.statusCode, name === "an object within one range" ? 206 : 200, name);
        assert.equal(stored.length, bytes.length, `${name}: the object's length`);
        const body: Buffer[] = [];
        for await (const chunk of stored.answer) body.push(chunk as Buffer);
        assert.ok(Buffer.concat(body).equals(bytes), `${name}: the whole object`);
      }
      rangeMemory.held = 0;
      limitRangeMemory(rangeMemoryBytes);
      store.partialToWhole = true;
      await assert.rejects(storedObject(client, "/docs/doc.csv", { parallel: 1, rangeBytes: 64 << 10 }, signal), /206/, "a part is never taken for the whole");
      store.partialToWhole = false;
      store.bytes = Buffer.alloc(0);
      const empty = await storedObject(client, "/docs/doc.csv", small, signal);
      assert.equal(empty.answer.statusCode, 200, "an empty object (416 to its first range) is asked for whole");
      assert.equal(empty.length, 0);
      empty.answer.resume();
    } finally {
      client.close();
      await store.stop();
    }
  });

  test("nothing past the first range is asked for before the first resume; with the node's range bytes nearly all held, ranges are read one after the other", async () => {
    const bytes = object(6 * (64 << 10));
    const store = await RangeStore.start(bytes);
    const client = storeClient(store.port);
    try {
      const signal = new AbortController().signal;
      const waiting = await storedObject(client, "/docs/doc.csv", small, signal);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(store.requests.length, 1, "only the first range before the body is read");
      assert.equal(rangeMemory.held, small.rangeBytes, "the first range's bytes are held");
      assert.ok(waiting.ranged, "read in ranges");
      discardStored(waiting);
      assert.equal(rangeMemory.held, 0, "and given back when the body is dropped unread");

      // Room for two ranges in the whole node: the first, and one more at a time.
      rangeMemory.held = rangeMemoryBytes - 2 * small.rangeBytes;
      store.requests.length = 0;
      let most = 0;
      const sink = new CollectingSink(2);
      const watch = setInterval(() => (most = Math.max(most, rangeMemory.held - (rangeMemoryBytes - 2 * small.rangeBytes))), 1);
      await read(store, sink, small, signal);
      await sink.settled;
      clearInterval(watch);
      assert.equal(sink.outcome?.error, undefined);
      assert.ok(sink.bytes().equals(bytes), "the whole object, in order");
      assert.equal(store.requests.length, 6);
      assert.ok(most <= 2 * small.rangeBytes, `at most two ranges held (${most / small.rangeBytes})`);
      assert.equal(rangeMemory.held, rangeMemoryBytes - 2 * small.rangeBytes, "every range's bytes given back");

      // Other GetObjects take all of the node's range bytes while this one reads: it goes on with one range at a time, to its end.
      rangeMemory.held = 0;
      const starved = new CollectingSink(1);
      await read(store, starved, small, signal);
      rangeMemory.held += rangeMemoryBytes;
      await starved.settled;
      assert.equal(starved.outcome?.error, undefined);
      assert.ok(starved.bytes().equals(bytes), "the whole object, in order, though no range bytes were free");
      assert.equal(rangeMemory.held, rangeMemoryBytes, "it gave back what it held and holds nothing");
    } finally {
      rangeMemory.held = 0;
      client.close();
      await store.stop();
    }
  });

  test("an export's ranged reads: each setting left out takes its default", () => {
    const defaults = rangedReadsOf(undefined);
    assert.deepEqual(defaults, { parallel: 1, rangeBytes: 8 << 20 }, "one GET unless the export says otherwise");
    assert.deepEqual(rangedReadsOf({ parallel: 3 }), { parallel: 3, rangeBytes: defaults.rangeBytes });
    assert.deepEqual(rangedReadsOf({ rangeBytes: 1 << 20 }), { parallel: defaults.parallel, rangeBytes: 1 << 20 });
  });
});
