import { randomInt } from "node:crypto";
import { connect as connectTcp } from "node:net";
import type { BackendKeyData } from "../../protocols/postgres/backend-key-data";
import { encodeCancelRequest } from "../../protocols/postgres/cancel-request";
import type { ProxyAudit, ProxyLimits } from "./types";

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

/** The export a CancelRequest came to, as far as cancelling needs it. */
export interface CancelTarget {
  exportId: string;
  backend: { host: string; port: number };
  limits: ProxyLimits;
  audit: ProxyAudit;
}

/**
 * Cancels the backend query of the connection these proxy keys were issued to: a CancelRequest with
 * the backend's own keys, on a connection of its own (what PostgreSQL expects). Keys that issued
 * nothing cancel nothing, and the refusal is audited.
 */
export function honourCancel(keys: CancelKeys, proxy: BackendKeyData, target: CancelTarget, cancellingConnectionId: string): void {
  const backendKeys = keys.backendFor(proxy);
  if (!backendKeys) {
    target.audit("warn", "cancel.refused", "cancel request with keys this export did not issue", {
      exportId: target.exportId,
      connectionId: cancellingConnectionId,
    });
    return;
  }
  const socket = connectTcp({ host: target.backend.host, port: target.backend.port }, () =>
    socket.end(encodeCancelRequest(backendKeys.processId, backendKeys.secretKey)),
  );
  socket.on("error", () => socket.destroy());
  socket.setTimeout(target.limits.connectTimeoutMs, () => socket.destroy());
}
