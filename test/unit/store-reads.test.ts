import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Agent, createServer, request, type IncomingMessage, type Server } from "node:http";
import type { NetConnectOpts, Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { storeConnection } from "../../proxies/objectstore/store-reads";

/** Bytes where every 8-byte word says where it is: a chunk read again after its buffer was reused would not hash the same. */
function body(bytes: number): Buffer {
  const out = Buffer.alloc(bytes);
  for (let at = 0; at + 8 <= bytes; at += 8) out.writeBigUInt64LE((BigInt(at) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn, at);
  return out;
}

/** A store stand-in sending `document` in pieces of uneven sizes, chunked or with a length, pausing now and then. */
async function unevenServer(document: Buffer): Promise<{ server: Server; port: number }> {
  const server = createServer(async (req, res) => {
    const chunked = req.url === "/chunked";
    res.writeHead(200, chunked ? {} : { "content-length": document.length });
    let at = 0;
    for (let piece = 1; at < document.length; piece++) {
      const size = Math.min(document.length - at, ((piece * 7919) % 300_000) + 1);
      if (!res.write(document.subarray(at, at + size))) await new Promise((resolve) => res.once("drain", resolve));
      at += size;
      if (piece % 50 === 0) await sleep(1);
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port };
}

async function text(answer: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

function get(agent: Agent, port: number, path: string, onSocket?: (socket: Socket) => void): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: "127.0.0.1", port, path, agent }, resolve);
    if (onSocket) outgoing.once("socket", (socket) => onSocket(socket as Socket));
    outgoing.on("error", reject);
    outgoing.end();
  });
}

test("a store's answers read into one reused buffer: bodies of many uneven reads arrive whole and unchanged, however slowly they are read", async () => {
  const document = body(24 << 20);
  const expected = createHash("sha256").update(document).digest("hex");
  const { server, port } = await unevenServer(document);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  agent.createConnection = (options) => storeConnection(options as NetConnectOpts);
  try {
    for (const path of ["/length", "/chunked", "/length"]) {
      const reads = new Set<ArrayBufferLike>();
      let socketReads = 0;
      const answer = await get(agent, port, path, (socket) =>
        socket.on("data", (read: Buffer) => {
          reads.add(read.buffer);
          socketReads++;
        }),
      );
      const chunks: Buffer[] = [];
      for await (const chunk of answer as AsyncIterable<Buffer>) {
        // A reader that keeps every chunk and takes its time, sometimes across event-loop turns in which the socket reads on.
        chunks.push(chunk);
        if (chunks.length % 3 === 0) await sleep(2);
        else await new Promise(setImmediate);
      }
      assert.equal(createHash("sha256").update(Buffer.concat(chunks)).digest("hex"), expected, `the body arrives whole and unchanged (${path})`);
      assert.ok(socketReads > 50, `${socketReads} reads`);
      assert.equal(reads.size, 1, `every read of the socket went into the same buffer (${path})`);
    }
  } finally {
    agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("bytes a store sends on an idle kept-alive socket are not taken as the next answer: the socket is closed", async () => {
  const server = createServer((_req, res) => {
    const socket = res.socket!;
    res.end("first");
    // After the answer: bytes no request asked for, shaped like an answer.
    setTimeout(() => socket.write("HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nforged"), 50);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  agent.createConnection = (options) => storeConnection(options as NetConnectOpts);
  try {
    let socket: Socket | undefined;
    const answer = await get(agent, port, "/", (used) => (socket = used));
    assert.equal(await text(answer), "first");
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(socket?.destroyed, "the socket that received unasked-for bytes is closed");
    const next = await get(agent, port, "/");
    assert.equal(await text(next), "first", "the next request has an answer of its own");
  } finally {
    agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
