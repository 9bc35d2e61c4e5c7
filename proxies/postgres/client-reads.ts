import type { Socket } from "node:net";
import { socketReadingInto, takeHandle } from "../../exports/handle-takeover";

/** Bytes read from the client at a time (the most a read can return, as Node's own reads). */
const clientReadBytes = 65_536;

/**
 * One read buffer for every handed-over client socket of this process: each read is copied out
 * of it before its callback returns, so sessions never see it (it is reused by the next read).
 */
let sharedReadBuffer: Buffer | undefined;

/**
 * A client socket handed over to a proxy worker, read the way the backend is (`onread`: into one
 * reused buffer, each read copied once into a buffer of its size and handed to `received`),
 * instead of through `'data'`: there Node allocates a 64 KiB ArrayBuffer per read and the
 * Readable stream queues, emits and schedules a read-ahead tick for every chunk (about 3.5 µs of
 * a worker's user CPU per pgbench transaction, measured with `perf record`; bench/RESULTS.md).
 *
 * Node offers `onread` only to sockets it creates, and a received socket is created by Node's
 * IPC code: its handle (not yet read from: the node accepts with `pauseOnConnect`, and the
 * worker takes it over in the same tick it arrives) moves into a new socket made with `onread`
 * (exports/handle-takeover.ts). The received socket
 * is destroyed when the new one closes, so Node's bookkeeping of handed-over sockets (the node's
 * `server.close()` waits for them) sees it close. Returns undefined when the socket cannot be
 * taken over (no handle that reads into a buffer, bytes already read, destroyed): it is then read through `'data'`.
 */
export function readThroughBuffer(received: Socket, bytes: (chunk: Buffer) => void): Socket | undefined {
  if (received.destroyed || received.readableLength > 0) return undefined;
  const handle = takeHandle(received);
  if (!handle) return undefined;
  const buffer = (sharedReadBuffer ??= Buffer.allocUnsafeSlow(clientReadBytes));
  const socket = socketReadingInto(handle, {
    buffer,
    callback: (length: number) => {
      const chunk = Buffer.allocUnsafe(length);
      buffer.copy(chunk, 0, 0, length);
      bytes(chunk);
      return true;
    },
  });
  socket.once("close", () => received.destroy());
  return socket;
}
