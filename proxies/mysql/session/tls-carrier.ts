import type { Socket } from "node:net";
import { Duplex } from "node:stream";

/**
 * A stream over `raw` that first yields `leftover` (bytes read from `raw` before TLS started),
 * for a TLSSocket to read the whole handshake from. Writes, ends and destruction go to `raw`.
 */
export function carrying(raw: Socket, leftover: Buffer): Socket {
  const carrier = new Duplex({
    read() {
      raw.resume();
    },
    write(chunk: Buffer, _encoding, done) {
      raw.write(chunk, done);
    },
    final(done) {
      raw.end();
      done();
    },
    destroy(error, done) {
      raw.destroy(error ?? undefined);
      done(error);
    },
  });
  carrier.push(leftover);
  raw.on("data", (chunk: Buffer) => {
    if (!carrier.push(chunk)) raw.pause();
  });
  raw.once("end", () => carrier.push(null));
  raw.once("close", () => carrier.destroy());
  // A TLSSocket takes any duplex stream; typed as the socket it stands for.
  return carrier as unknown as Socket;
}
