import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { readThroughBuffer } from "../../proxies/postgres/client-reads";

/** A loopback server accepting as the node does (`pauseOnConnect`), and a client connected to it. */
async function acceptedPair(): Promise<{ server: Server; accepted: Socket; client: Socket }> {
  const server = createServer({ pauseOnConnect: true });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const client = connect((server.address() as AddressInfo).port, "127.0.0.1");
  const [accepted] = (await once(server, "connection")) as [Socket];
  await once(client, "connect");
  return { server, accepted, client };
}

/** Resolves with the next `count` chunks `readThroughBuffer` hands over. */
function chunks(count: number): { received: Buffer[]; take: (chunk: Buffer) => void; done: Promise<void> } {
  const received: Buffer[] = [];
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  return {
    received,
    take: (chunk) => {
      received.push(chunk);
      if (received.length === count) resolve();
    },
    done,
  };
}

describe("a handed-over client socket read into one buffer (proxies/postgres/client-reads.ts)", () => {
  test("each read is handed over as its own copy: a chunk kept by the session is not overwritten by the next read", { timeout: 5000 }, async () => {
    const { server, accepted, client } = await acceptedPair();
    const reads = chunks(2);
    const socket = readThroughBuffer(accepted, reads.take);
    assert.ok(socket, "the accepted socket, not yet read from, is taken over");
    client.write("first chunk, longer than the second");
    await new Promise((resolve) => setTimeout(resolve, 50));
    client.write("second");
    await reads.done;
    // Were the first chunk the read buffer itself, the second read would have overwritten its start ("secondhunk, ...").
    assert.equal(reads.received[0]!.toString(), "first chunk, longer than the second");
    assert.equal(reads.received[1]!.toString(), "second");
    // Writes go out on the same connection.
    socket.write("answer");
    const [answer] = (await once(client, "data")) as [Buffer];
    assert.equal(answer.toString(), "answer");
    client.destroy();
    socket.destroy();
    server.close();
  });

  test("the received socket closes with the new one: a server waiting for its connections to end is not held open", { timeout: 5000 }, async () => {
    const { server, accepted, client } = await acceptedPair();
    const socket = readThroughBuffer(accepted, () => {});
    assert.ok(socket);
    let closed = false;
    server.close(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(closed, false, "the accepted connection is still open");
    socket.destroy();
    await once(accepted, "close");
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(closed, true, "the server saw its connection end");
    client.destroy();
  });

  test("a socket that cannot be taken over (destroyed) is left to be read through 'data'", async () => {
    const { server, accepted, client } = await acceptedPair();
    accepted.destroy();
    assert.equal(
      readThroughBuffer(accepted, () => assert.fail("nothing is read")),
      undefined,
    );
    client.destroy();
    server.close();
  });
});
