import pino from "pino";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { NatsServerProcess } from "../service/nats-server";
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
    NatsServerProcess.start({
      host: "127.0.0.1",
      port: ports[index],
      dir: tempDir(`nats${index}`),
      serverName: `test-${index}`,
      cluster: { name: "test", port: clusterPort, routes: routes.filter((_, i) => i !== index) },
    }),
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

/**
 * Every message a stream holds when called (optionally only those under `filter`), in order.
 * Stops on the message the server says is the last pending one, so a slow delivery is waited for, never cut short.
 */
export async function storedMessages<T>(nc: NatsConnection, stream: string, filter?: string): Promise<Array<{ subject: string; data: T }>> {
  return (await storedPayloads(nc, stream, filter)).map(({ subject, payload }) => ({ subject, data: JSON.parse(payload) as T }));
}

/** Every trace record WARDEN_TRACE holds under `filter` (a message carries one or more, one JSON object a line). */
export async function storedTraceRecords<T>(nc: NatsConnection, filter = "warden.trace.>"): Promise<Array<{ subject: string; record: T }>> {
  return (await storedPayloads(nc, "WARDEN_TRACE", filter)).flatMap(({ subject, payload }) =>
    payload.split("\n").map((line) => ({ subject, record: JSON.parse(line) as T })),
  );
}

/** The payloads of every message a stream holds when called, as text, in order. */
export async function storedPayloads(nc: NatsConnection, stream: string, filter?: string): Promise<Array<{ subject: string; payload: string }>> {
  const js = jetstream(nc);
  const info = await (await jetstreamManager(nc)).streams.info(stream, filter === undefined ? undefined : { subjects_filter: filter });
  const expected = filter === undefined ? info.state.messages : Object.values(info.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
  const messages: Array<{ subject: string; payload: string }> = [];
  if (expected === 0) return messages;
  const consumer = await js.consumers.get(stream, filter === undefined ? {} : { filter_subjects: filter });
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    for await (const msg of await consumer.fetch({ max_messages: 1000, expires: 2000 })) {
      messages.push({ subject: msg.subject, payload: msg.string() });
      if (msg.info.pending === 0 && messages.length >= expected) return messages;
    }
  }
  throw new Error(`read ${messages.length} of the ${expected} messages in ${stream}`);
}
