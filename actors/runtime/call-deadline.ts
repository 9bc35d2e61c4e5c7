/**
 * A call's deadline on the node that runs it. The caller sends it twice: `d`, the time left when
 * sent, counted here from arrival on this node's monotonic clock (immune to clocks that disagree,
 * blind to time spent in transit), and `x`, the deadline itself on the caller's wall clock (sees
 * time in transit, a paused nats-server included, but only as well as the two clocks agree). The
 * earlier of the two wins. `x` gets `clockSkewMs` of slack so that a receiver whose clock runs
 * ahead neither refuses nor cuts short a call its caller still waits for.
 */

/**
 * How far (ms) past the caller's deadline this node is, the skew margin allowed: 0 or more means
 * the caller has given up and the call must not start; negative, the time it has left. A call
 * without `x` (sent by a node older than the field) has no such bound: -Infinity.
 */
export function msPastCallerDeadline(expiresAt: number | undefined, wallNow: number, clockSkewMs: number): number {
  return expiresAt === undefined ? -Infinity : wallNow - expiresAt - clockSkewMs;
}

/** The monotonic time by which this node must be done with a call that arrived at `arrivedAt`. */
export function runDeadline(arrivedAt: number, leftWhenSentMs: number, msPastDeadline: number): number {
  return arrivedAt + Math.min(leftWhenSentMs, -msPastDeadline);
}
