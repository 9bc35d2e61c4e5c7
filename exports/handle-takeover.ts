import { Socket, type OnReadOpts, type SocketConstructorOpts } from "node:net";

/**
 * Taking a connected socket's handle over into a new socket that reads with `onread` (into the
 * caller's buffer, no ArrayBuffer allocated per read): Node offers `onread` only to sockets it
 * creates, so the handle moves, as Node itself makes sockets of received handles (the `handle`
 * option). Relies on Node's `_handle` field (undocumented): this is its one place. Used for the
 * PostgreSQL export's handed-over client sockets (proxies/postgres/client-reads.ts) and the
 * objectstore export's store bodies (proxies/objectstore/store-body.ts).
 */

/**
 * The handle of `socket`, taken from it when it can read into a caller's buffer (a TCP or pipe
 * handle with `useUserBuffer`); undefined, and `socket` left as it was, otherwise. From then on
 * nothing reads or writes through `socket` (a read that reached it would be lost): the new socket
 * must own the handle in the same tick, and the caller destroys `socket` when Node's bookkeeping
 * of it should see it close.
 */
export function takeHandle(socket: Socket): object | undefined {
  const internal = socket as unknown as { _handle?: { useUserBuffer?: unknown } | null };
  const handle = internal._handle;
  if (!handle || typeof handle.useUserBuffer !== "function") return undefined;
  internal._handle = null;
  return handle;
}

/** A socket over a handle taken with `takeHandle`, reading with `onread`; with `pauseOnCreate`, not before `resume()`. */
export function socketReadingInto(handle: object, onread: OnReadOpts, options: { pauseOnCreate?: boolean } = {}): Socket {
  return new Socket({ handle, readable: true, writable: true, onread, ...options } as SocketConstructorOpts);
}
