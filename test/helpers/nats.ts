import pino from "pino";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { NatsServerProcess } from "../../service/nats-server";
import { freePort } from "./ports";
import { tempDir } from "./temp";

/** A throwaway nats-server with JetStream on a free loopback port. */
export async function startNats(dir = tempDir("nats")): Promise<NatsServerProcess> {
  return NatsServerProcess.start({ host: "127.0.0.1", port: await freePort(), dir, serverName: "test" });
}

/** Three clustered nats-servers (JetStream replicas 3), as an operator would run them. */
export async function startNatsCluster(size = 3): Promise<NatsServerProcess[]> {
  const clusterPorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = clusterPorts.map((port) => `nats-route://127.0.0.1:${port}`);
  return Promise.all(
    clusterPorts.map(async (clusterPort, index) =>
      NatsServerProcess.start({ host: "127.0.0.1", port: await freePort(), dir: tempDir(`nats${index}`), serverName: `test-${index}`, cluster: { name: "test", port: clusterPort, routes: routes.filter((_, i) => i !== index) } }),
    ),
  );
}

export function connectTo(server: NatsServerProcess | string): Promise<NatsConnection> {
  return connect({ servers: typeof server === "string" ? server : server.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
}

export const silentLogger = pino({ level: "silent" });
