import pino from "pino";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { NatsServerProcess } from "../../service/nats-server";
import { freePort, freePorts } from "./ports";
import { tempDir } from "./temp";

/** A throwaway nats-server with JetStream on a free loopback port. */
export async function startNats(dir = tempDir("nats")): Promise<NatsServerProcess> {
  return NatsServerProcess.start({ host: "127.0.0.1", port: await freePort(), dir, serverName: "test" });
}

/** Three clustered nats-servers (JetStream replicas 3), as an operator would run them. */
export async function startNatsCluster(size = 3): Promise<NatsServerProcess[]> {
  const ports = await freePorts(size * 2);
  const clusterPorts = ports.slice(size);
  const routes = clusterPorts.map((port) => `nats-route://127.0.0.1:${port}`);
  const starting = clusterPorts.map((clusterPort, index) =>
    NatsServerProcess.start({ host: "127.0.0.1", port: ports[index], dir: tempDir(`nats${index}`), serverName: `test-${index}`, cluster: { name: "test", port: clusterPort, routes: routes.filter((_, i) => i !== index) } }),
  );
  const outcomes = await Promise.allSettled(starting);
  const failed = outcomes.find((outcome) => outcome.status === "rejected");
  if (failed) {
    // Never leave the servers that did start behind: they would keep the test run alive.
    await Promise.all(outcomes.map((outcome) => (outcome.status === "fulfilled" ? outcome.value.stop() : undefined)));
    throw (failed as PromiseRejectedResult).reason;
  }
  return outcomes.map((outcome) => (outcome as PromiseFulfilledResult<NatsServerProcess>).value);
}

/** Connects to one server, or to a comma-separated list (nats.js takes a single string as one server). */
export function connectTo(server: NatsServerProcess | string): Promise<NatsConnection> {
  const servers = typeof server === "string" ? server.split(",").map((url) => url.trim()) : [server.url];
  return connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
}

export const silentLogger = pino({ level: "silent" });
