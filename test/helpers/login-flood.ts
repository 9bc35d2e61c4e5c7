import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import type { AuditRecord } from "../../actors/runtime/event-log";
import { connectTo, storedMessages } from "../../testkit/nats";

export interface SilentConnection {
  socket: Socket;
  /** What the server told it, once the connection closed. */
  closed: Promise<string>;
  /** Taken before connecting: the server cannot have accepted it, or started its login timer, earlier. */
  startedAt: number;
  /** When it closed (set on close). */
  closedAt?: number;
}

/** A connection that never logs in: it connects (from `localAddress`), keeps what it is told, and says nothing. */
export function silentConnection(port: number, localAddress: string): Promise<SilentConnection> {
  return new Promise((resolve) => {
    const startedAt = Date.now();
    const socket = connect({ host: "127.0.0.1", port, localAddress });
    let told = "";
    socket.on("data", (chunk: Buffer) => (told += chunk.toString("latin1")));
    socket.on("error", () => undefined);
    const connection: SilentConnection = { socket, startedAt, closed: Promise.resolve("") };
    connection.closed = new Promise<string>((done) =>
      socket.once("close", () => {
        connection.closedAt = Date.now();
        done(told);
      }),
    );
    socket.once("connect", () => resolve(connection));
    socket.once("error", () => resolve(connection));
  });
}

/** The export's `connection.refused` audit records are counts (one a minute per reason), not one per refused connection. */
export async function assertRefusalsCounted(natsUrl: string, component: string, exportId: string, refusedAtLeast: number): Promise<void> {
  const nc = await connectTo(natsUrl);
  try {
    const records = (await storedMessages<AuditRecord>(nc, "WARDEN_AUDIT", `warden.audit.${component}.>`)).filter(
      (m) => m.data.event === "connection.refused" && (m.data.details as { exportId: string }).exportId === exportId,
    );
    assert.ok(records.length >= 1 && records.length <= 4, `refusals audited as counts, not ${refusedAtLeast} records: ${records.length}`);
  } finally {
    await nc.close();
  }
}

/** More connections than `perAddress` from one address: the extra ones are refused at once, and `stillServed` (another address) still works. */
export async function assertAddressShare(port: number, perAddress: number, stillServed: () => Promise<void>): Promise<void> {
  const flood = await Promise.all(Array.from({ length: perAddress + 10 }, () => silentConnection(port, "127.0.0.5")));
  try {
    const refused = await Promise.all(flood.slice(perAddress).map((f) => f.closed));
    assert.ok(
      refused.every((told) => told.includes("too many connections from your address")),
      "the address's extra connections are refused at once",
    );
    await stillServed();
  } finally {
    for (const f of flood) f.socket.destroy();
  }
}

export interface LoginFlood {
  port: number;
  maxLoggingIn: number;
  loginTimeoutMs: number;
  /** Loopback addresses the 600 connections come from (enough that the per-address cap does not bind). */
  addresses: number;
  /** What a connection over the cap is told (the protocol's refusal), and what one cut at the login timeout is told. */
  refusedTold: string;
  cutTold: string;
  /** Asserts the logged-in client still gets its rows; called during and after the flood. */
  stillWorking(): Promise<void>;
}

/**
 * 600 connections that never log in: the logged-in client keeps working, the connections over
 * the cap are refused at once and told why, at most `maxLoggingIn` hold a place, and they are cut
 * at the login timeout (not before).
 */
export async function assertLoginFloodHeld(options: LoginFlood): Promise<void> {
  const { maxLoggingIn, loginTimeoutMs } = options;
  const flood = await Promise.all(Array.from({ length: 600 }, (_, i) => silentConnection(options.port, `127.0.0.${10 + (i % options.addresses)}`)));
  try {
    for (let i = 0; i < 10; i++) await options.stillWorking();
    const refused = await Promise.race([
      Promise.all(flood.slice(maxLoggingIn + 50).map((f) => f.closed)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("refusals not sent at once")), loginTimeoutMs - 500)),
    ]);
    assert.ok(
      refused.every((told) => told.includes(options.refusedTold) && told.includes("too many connections are logging in")),
      `the connections over the cap are told why: ${JSON.stringify([...new Set(refused)].slice(0, 3))}`,
    );
    const told = await Promise.all(flood.map((f) => f.closed));
    const cut = flood.filter((_, i) => told[i].includes(options.cutTold));
    assert.ok(cut.length > 0 && cut.length <= maxLoggingIn, `at most ${maxLoggingIn} held a place until the login timeout, got ${cut.length}`);
    // Per connection, from before it connected: opening 600 can take a good part of the timeout.
    const shortestHold = Math.min(...cut.map((f) => (f.closedAt ?? 0) - f.startedAt));
    assert.ok(shortestHold >= loginTimeoutMs * 0.95, `held places were cut at the timeout, not before: one was cut after ${shortestHold} ms`);
    await options.stillWorking();
  } finally {
    for (const f of flood) f.socket.destroy();
  }
}
