import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { Agent, request, type IncomingMessage } from "node:http";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import type { InputSink } from "../../redaction/direct-input";
import { takeOverBody, type StoreBody } from "../../proxies/objectstore/store-body";

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A store on loopback that answers one GET by writing `pieces` one after the other (with a pause
 * between, so each is its own read), then doing `after` to the connection.
 */
async function store(pieces: Array<string | Buffer>, after: "keep" | "destroy" = "keep"): Promise<{ server: Server; port: number; closed: Promise<void> }> {
  let closed!: () => void;
  const done = new Promise<void>((resolve) => (closed = resolve));
  const server = createServer(async (socket: Socket) => {
    socket.on("close", () => closed());
    socket.on("error", () => undefined);
    await once(socket, "data");
    for (const piece of pieces) {
      if (socket.destroyed) return;
      socket.write(piece);
      await wait(30);
    }
    if (after === "destroy") socket.destroy();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, port: (server.address() as AddressInfo).port, closed: done };
}

/** The store's answer, as ObjectStore.send gives it (headers read, body not). */
async function answer(port: number): Promise<IncomingMessage> {
  const agent = new Agent({ keepAlive: true });
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: "127.0.0.1", port, path: "/doc.csv", agent }, (response) => {
      response.on("error", () => undefined);
      resolve(response);
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
}

/** A sink like the redactor's: one big buffer, each room the free tail, counting the reads that landed in place. */
class TailSink implements InputSink {
  readonly buffer = Buffer.alloc(1 << 20);
  length = 0;
  inPlace = 0;
  arrivals = 0;
  stopAfter = Number.POSITIVE_INFINITY;
  outcome?: { error?: Error };
  readonly settled: Promise<void>;
  private settle!: () => void;

  constructor() {
    this.settled = new Promise((resolve) => (this.settle = resolve));
  }

  room(): Buffer {
    return this.buffer.subarray(this.length);
  }

  arrived(bytes: Buffer): boolean {
    this.arrivals++;
    if (bytes.buffer === this.buffer.buffer && bytes.byteOffset === this.buffer.byteOffset + this.length) this.inPlace++;
    else bytes.copy(this.buffer, this.length);
    this.length += bytes.length;
    return this.arrivals < this.stopAfter;
  }

  ended(error?: Error): void {
    assert.equal(this.outcome, undefined, "ended once");
    this.outcome = { error };
    this.settle();
  }

  error(): Error | undefined {
    return this.outcome?.error;
  }

  text(): string {
    return this.buffer.subarray(0, this.length).toString();
  }
}

const head = (length: number) => `HTTP/1.1 200 OK\r\ncontent-type: text/csv\r\ncontent-length: ${length}\r\n\r\n`;

async function read(port: number, sink: TailSink): Promise<StoreBody> {
  const body = takeOverBody(await answer(port), new AbortController().signal);
  assert.ok(body, "a Content-Length body over plain HTTP is taken over");
  body.readInto(sink);
  body.resume();
  return body;
}

/** A store that sends a 30-byte `body` in three pieces, the first with the head. */
const inThreePieces = (body: string) => store([head(body.length) + body.slice(0, 10), body.slice(10, 20), body.slice(20)]);

/** The sink ended without an error, holding all of `body` in order. */
async function receivedWhole(sink: TailSink, body: string): Promise<void> {
  await sink.settled;
  assert.equal(sink.error(), undefined);
  assert.equal(sink.text(), body);
}

describe("the store's body read straight into a sink's room (proxies/objectstore/store-body.ts)", () => {
  test("the head and the first body bytes in one read, the rest split at odd places: every byte once, in order, later reads in place", {
    timeout: 10_000,
  }, async () => {
    const body = `id,email\n${"u1,a@x\n".repeat(3000)}`;
    const cuts = [5, 6, 1, 4093, 7, 16_384, 3];
    const pieces: string[] = [head(body.length) + body.slice(0, cuts[0])];
    let at = cuts[0]!;
    for (const cut of cuts.slice(1)) pieces.push(body.slice(at, (at += cut)));
    pieces.push(body.slice(at));
    const { server, port, closed } = await store(pieces);
    const sink = new TailSink();
    await read(port, sink);
    await receivedWhole(sink, body);
    assert.ok(sink.inPlace >= cuts.length - 1, `${sink.inPlace} of ${sink.arrivals} reads landed in the sink's room`);
    await closed; // the connection is closed after the body (never reused)
    server.close();
  });

  test("a body cut short (the connection ends before Content-Length) fails, it never ends as complete", { timeout: 10_000 }, async () => {
    const { server, port } = await store([`${head(1000)}a,b\n`, "c".repeat(400)], "destroy");
    const sink = new TailSink();
    await read(port, sink);
    await sink.settled;
    assert.match(String(sink.error()?.message), /ended after 404 of the body's 1000 bytes/);
    server.close();
  });

  test("bytes past Content-Length in a read fail the body, and none of them is handed on", { timeout: 10_000 }, async () => {
    const { server, port } = await store([`${head(10)}a,b\n`, "c,d\n12EXTRA"]);
    const sink = new TailSink();
    await read(port, sink);
    await sink.settled;
    assert.match(String(sink.error()?.message), /more than the body's Content-Length/);
    assert.equal(sink.text(), "a,b\n", "nothing of the read that went past the length");
    server.close();
  });

  test("a sink that says stop gets nothing more until resumed; the rest follows on resume", { timeout: 10_000 }, async () => {
    const body = "x".repeat(30);
    const { server, port } = await inThreePieces(body);
    const sink = new TailSink();
    // The first arrival is what the HTTP client had read with the head, the second a read of the socket.
    sink.stopAfter = 2;
    const reading = await read(port, sink);
    await wait(200);
    assert.equal(sink.arrivals, 2, "stopped after the second arrival while the store sent the rest");
    assert.equal(sink.outcome, undefined);
    sink.stopAfter = Number.POSITIVE_INFINITY;
    reading.resume();
    await receivedWhole(sink, body);
    server.close();
  });

  test("pause() stops the socket's reads (an onread socket's readStop) until resume()", { timeout: 10_000 }, async () => {
    const body = "y".repeat(30);
    const { server, port } = await inThreePieces(body);
    const sink = new TailSink();
    const reading = await read(port, sink);
    reading.pause();
    await wait(200);
    assert.equal(sink.arrivals, 1, "only what the HTTP client had read with the head");
    reading.resume();
    await receivedWhole(sink, body);
    server.close();
  });

  test("a read kept while stopped is handed on at resume before the next, and the next lands after it (no room asked for while stopped)", {
    timeout: 10_000,
  }, async () => {
    const body = "aaaaaaaaaabbbbbbbbbbcccccccccc";
    const { server, port } = await inThreePieces(body);
    const sink = new TailSink();
    const reading = await read(port, sink);
    // Node's stream machinery restarts an onread socket's reads once when pause() follows resume() in the same tick.
    reading.resume();
    reading.pause();
    await wait(200);
    reading.resume();
    await receivedWhole(sink, body);
    server.close();
  });

  test("the client's request ending (its signal) fails the body and closes the store's connection", { timeout: 10_000 }, async () => {
    const { server, port, closed } = await store([`${head(1 << 20)}a,b\n`]);
    const abort = new AbortController();
    const reading = takeOverBody(await answer(port), abort.signal);
    assert.ok(reading);
    const sink = new TailSink();
    reading.readInto(sink);
    reading.resume();
    await wait(50);
    abort.abort();
    await sink.settled;
    assert.match(String(sink.error()?.message), /client's request ended/);
    await closed;
    server.close();
  });

  test("a store that sends nothing for the idle limit fails the body and its connection is closed", { timeout: 10_000 }, async () => {
    const { server, port, closed } = await store([`${head(1000)}a,b\n`]);
    const reading = takeOverBody(await answer(port), new AbortController().signal, 300);
    assert.ok(reading);
    const sink = new TailSink();
    reading.readInto(sink);
    reading.resume();
    await sink.settled;
    assert.match(String(sink.error()?.message), /sent nothing for 0.3 s/);
    assert.equal(sink.text(), "a,b\n");
    await closed;
    server.close();
  });

  test("chunked answers and answers the HTTP client already read whole are left to it", { timeout: 10_000 }, async () => {
    const chunked = await store(["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\na,b\n\r\n", "0\r\n\r\n"]);
    const first = await answer(chunked.port);
    assert.equal(takeOverBody(first, new AbortController().signal), undefined);
    first.resume();
    chunked.server.close();
    const whole = await store([`${head(4)}a,b\n`]);
    const second = await answer(whole.port);
    await wait(50);
    assert.equal(takeOverBody(second, new AbortController().signal), undefined, "the body is complete in the HTTP client");
    second.resume();
    whole.server.close();
  });
});
