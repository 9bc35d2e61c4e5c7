// A TCP proxy that only copies bytes (Node streams, one process): the benchmarks' floor for what
// any proxy on Node's event loop costs, before a byte is looked at. Usage: node tcp-pipe-proxy.js <port> <target port>
import { connect, createServer } from "node:net";

const [port, target] = process.argv.slice(2).map(Number);
if (!port || !target) throw new Error("usage: tcp-pipe-proxy <port> <target port>");

createServer((client) => {
  const server = connect({ host: "127.0.0.1", port: target });
  client.setNoDelay(true);
  server.setNoDelay(true);
  client.pipe(server);
  server.pipe(client);
  client.on("error", () => server.destroy());
  server.on("error", () => client.destroy());
  client.on("close", () => server.destroy());
  server.on("close", () => client.destroy());
}).listen(port, "127.0.0.1", () => process.send?.("listening"));
