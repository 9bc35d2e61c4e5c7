import { createServer } from "node:net";

/** A port that was free on loopback a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** `count` distinct free ports: probing one at a time can hand out the same port twice. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** A free port that is none of `claimed` (ports handed out earlier whose servers may not be listening yet). */
export async function freePortBesides(claimed: Iterable<number>): Promise<number> {
  const taken = new Set(claimed);
  for (;;) {
    const port = await freePort();
    if (!taken.has(port)) return port;
  }
}
