import { connect, type NetConnectOpts, type Socket } from "node:net";

/** One socket read takes up to this much: four times Node's default 64 KiB, so a large body takes a quarter of the reads. */
const readBytes = 256 << 10;

/**
 * A TCP connection to the store (http.Agent's createConnection) whose reads all go into one
 * buffer it reuses (net's `onread`), instead of the new 64 KiB ArrayBuffer per read a socket
 * gets otherwise: V8 counts every new ArrayBuffer as external memory, and 200 MiB of them per
 * 200 MiB read help start full mark-compacts. Each read goes to Node's HTTP parser as the
 * socket's "data" event, as without `onread`; the parser keeps nothing of the bytes it is given
 * (headers are saved as strings, every body piece is copied into a Buffer of its own), so the
 * buffer can be read into again once the event returns. Bytes that arrive while no request
 * listens (an idle kept-alive socket) are not the answer to anything: the socket is closed.
 */
export function storeConnection(options: NetConnectOpts): Socket {
  const buffer = Buffer.allocUnsafeSlow(readBytes);
  const socket: Socket = connect({
    ...options,
    onread: {
      buffer,
      callback: (length) => {
        if (socket.listenerCount("data") === 0) socket.destroy(new Error("the store sent bytes no request asked for"));
        else socket.emit("data", buffer.subarray(0, length));
        return true;
      },
    },
  });
  return socket;
}
