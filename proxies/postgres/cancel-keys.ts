import { randomInt } from "node:crypto";
import type { BackendKeyData } from "../../protocols/postgres/backend-key-data";

/**
 * Cancel keys issued by the proxy in place of the backend's: a client never learns the
 * backend's process id or secret, and a CancelRequest is honoured only with keys the proxy gave.
 */
export class CancelKeys {
  private readonly issued = new Map<string, BackendKeyData>();

  private static key(keys: BackendKeyData): string {
    return `${keys.processId}:${keys.secretKey}`;
  }

  issue(backend: BackendKeyData): BackendKeyData {
    for (;;) {
      const proxy = { processId: randomInt(1, 2 ** 31 - 1), secretKey: randomInt(-(2 ** 31), 2 ** 31 - 1) };
      const key = CancelKeys.key(proxy);
      if (this.issued.has(key)) continue;
      this.issued.set(key, backend);
      return proxy;
    }
  }

  backendFor(proxy: BackendKeyData): BackendKeyData | undefined {
    return this.issued.get(CancelKeys.key(proxy));
  }

  revoke(proxy: BackendKeyData): void {
    this.issued.delete(CancelKeys.key(proxy));
  }
}
