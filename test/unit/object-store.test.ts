import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { Readable } from "node:stream";
import { BackendConnections } from "../../exports/backend-connections";
import { ObjectStore } from "../../proxies/objectstore/object-store";

/**
 * A store that answers every request 200, keeps its connections alive, and closes a connection
 * under the first request whose path holds "drop" (a kept-alive connection closed by the store as
 * the request arrives).
 */
async function setUp() {
  const requests: string[] = [];
  const dropped = new Set<string>();
  let connections = 0;
  const server: Server = createServer((socket: Socket) => {
    connections++;
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => {
      const line = chunk.toString("latin1").split("\r\n")[0]!;
      if (!line.startsWith("GET") && !line.startsWith("HEAD") && !line.startsWith("PUT")) return; // a body's bytes
      requests.push(line);
      if (line.includes("drop") && !dropped.has(line)) {
        dropped.add(line);
        return void socket.destroy();
      }
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const endpoint = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const store = new ObjectStore(
    endpoint,
    undefined,
    new BackendConnections({ exportId: "exp-1", component: "objectstore", endpoint, storedAudit: async () => true }),
  );
  const send = async (method: string, path: string, body?: string) => {
    const answer = await store.send({
      method,
      path,
      signal: new AbortController().signal,
      ...(body ? { body: Readable.from([body]), headers: { "content-length": String(body.length) } } : {}),
    });
    answer.resume();
    await once(answer, "end");
    return answer.statusCode;
  };
  const stop = async () => {
    store.close();
    await new Promise((resolve) => server.close(resolve));
  };
  return { send, requests, connections: () => connections, stop };
}

describe("the export's store client (proxies/objectstore/object-store.ts)", () => {
  test("a GET or HEAD on a kept-alive connection the store closes under it is sent again on a new connection", async () => {
    const { send, requests, connections, stop } = await setUp();
    try {
      assert.equal(await send("GET", "/docs/a.csv"), 200);
      assert.equal(await send("GET", "/docs/drop.csv"), 200, "answered from the second connection");
      assert.equal(await send("HEAD", "/docs/drop-head.csv"), 200);
      assert.deepEqual(
        requests.filter((line) => line.includes("drop")),
        ["GET /docs/drop.csv HTTP/1.1", "GET /docs/drop.csv HTTP/1.1", "HEAD /docs/drop-head.csv HTTP/1.1", "HEAD /docs/drop-head.csv HTTP/1.1"],
      );
      assert.equal(connections(), 3, "one connection, then one per closed one");
    } finally {
      await stop();
    }
  });

  test("a write whose body went out is not sent again: the client gets 503 ServiceUnavailable", async () => {
    const { send, requests, stop } = await setUp();
    try {
      assert.equal(await send("GET", "/docs/a.csv"), 200);
      await assert.rejects(send("PUT", "/docs/drop-put.csv", "users.id\n"), (error: Error & { code?: string; status?: number }) => {
        assert.equal(error.code, "ServiceUnavailable");
        assert.equal(error.status, 503);
        return true;
      });
      assert.equal(requests.filter((line) => line.includes("drop-put")).length, 1, "the store saw the write once");
    } finally {
      await stop();
    }
  });
});
