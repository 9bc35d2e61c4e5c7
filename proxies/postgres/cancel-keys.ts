import { randomInt } from "node:crypto";
import { connect as connectTcp } from "node:net";
import type { BackendKeyData } from "../../protocols/postgres/backend-key-data";
import { encodeCancelRequest } from "../../protocols/postgres/cancel-request";

/**
 * Cancel keys issued by the proxy in place of the backend's: a client never learns the
 * backend's process id or secret, and a CancelRequest is honoured only with keys the proxy gave.
 * When an export's connections are spread over several processes (slots), a process id names
 * the slot that issued it (process id modulo slots): a CancelRequest, which arrives on a
 * connection of its own, is sent to that slot. The secret key stays 32 random bits.
 */
export class CancelKeys {
  private readonly issued = new Map<string, BackendKeyData>();

  constructor(
    readonly slot = 0,
    private readonly slots = 1,
  ) {}

  private static key(keys: BackendKeyData): string {
    return `${keys.processId}:${keys.secretKey}`;
  }

  issue(backend: BackendKeyData): BackendKeyData {
    for (;;) {
      const random = randomInt(1, Math.floor((2 ** 31 - 1) / this.slots));
      const proxy = { processId: random * this.slots + this.slot, secretKey: randomInt(-(2 ** 31), 2 ** 31 - 1) };
      const key = CancelKeys.key(proxy);
      if (this.issued.has(key)) continue;
      this.issued.set(key, backend);
      return proxy;
    }
  }

  /** The slot that issued these keys (if any did). */
  slotOf(proxy: BackendKeyData): number {
    return proxy.processId % this.slots;
  }

  backendFor(proxy: BackendKeyData): BackendKeyData | undefined {
    return this.issued.get(CancelKeys.key(proxy));
  }

  revoke(proxy: BackendKeyData): void {
    this.issued.delete(CancelKeys.key(proxy));
  }
}

/**
 * Cancels the backend query of the connection these proxy keys were issued to: a CancelRequest with
 * the backend's own keys, on a connection of its own (what PostgreSQL expects). False when these
 * keys issued nothing (the caller audits the refusal).
 */
export function honourCancel(keys: CancelKeys, proxy: BackendKeyData, backend: { host: string; port: number }, connectTimeoutMs: number): boolean {
  const backendKeys = keys.backendFor(proxy);
  if (!backendKeys) return false;
  const socket = connectTcp({ host: backend.host, port: backend.port }, () => socket.end(encodeCancelRequest(backendKeys.processId, backendKeys.secretKey)));
  socket.on("error", () => socket.destroy());
  socket.setTimeout(connectTimeoutMs, () => socket.destroy());
  return true;
}
