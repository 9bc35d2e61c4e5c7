/**
 * The runtime's errors: a small set of classes that say whether trying again can help.
 * Each carries a machine-readable code and, where one exists, the underlying cause.
 */
export abstract class RuntimeError extends Error {
  abstract readonly retryable: boolean;
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown; details?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
    this.details = options?.details;
  }
  /** Machine-readable specifics for the caller (e.g. the problems of a rejected write); travels with the error. */
  readonly details: unknown;
}

export interface WireError {
  code: string;
  message: string;
  retryable: boolean;
  details?: unknown;
}

/** Trying again (after a pause) may succeed: ownership moving, a node starting, a transient fault. */
export class RetryableError extends RuntimeError {
  readonly retryable = true;
}

/** Trying again will give the same answer: bad input, unknown actor type or handler, a refused request. */
export class FatalError extends RuntimeError {
  readonly retryable = false;
}

/** The call's deadline passed. Whether an exclusive handler ran is unknown to the caller. */
export class DeadlineExceededError extends RetryableError {
  constructor(message = "the call's deadline passed", options?: { cause?: unknown }) {
    super("DEADLINE_EXCEEDED", message, options);
  }
}

/**
 * The caller's deadline had passed when the call reached the actor (held in transit: a paused or
 * slow nats-server), so it was not started. The caller has normally given up already and never
 * reads this; one that still waits (clocks further apart than the skew margin) knows nothing ran.
 */
export class ExpiredBeforeStartError extends RetryableError {
  constructor(message = "the caller's deadline passed before the call reached its actor; it was not started", options?: { cause?: unknown }) {
    super("EXPIRED_BEFORE_START", message, options);
  }
}

/** The receiving node does not own the actor (ownership is moving): route again. */
export class NotOwnerError extends RetryableError {
  constructor(message = "this node does not own the actor", options?: { cause?: unknown }) {
    super("NOT_OWNER", message, options);
  }
}

/** A revision-checked write found a newer revision than the one it was based on. */
export class StaleRevisionError extends RetryableError {
  constructor(
    readonly key: string,
    readonly expectedRevision: number,
    options?: { cause?: unknown },
  ) {
    super("STALE_REVISION", `state of ${key} changed since revision ${expectedRevision}`, options);
  }
}

/** JetStream did not store a trace record within its deadline: the answer it accounts for must not leave (fail closed). */
export class TraceUnavailableError extends RetryableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("TRACE_UNAVAILABLE", message, options);
  }
}

/** JetStream did not store an audit record (the audit stream is full or unreachable): what needed it must not go on (fail closed). */
export class AuditUnavailableError extends RetryableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("AUDIT_UNAVAILABLE", message, options);
  }
}

/** An error raised by a handler and passed on to the caller with its code. */
export class HandlerError extends FatalError {}

/** Rebuilds an error from its wire form on the caller's side. */
export function errorFromWire(wire: WireError): RuntimeError {
  if (wire.code === "DEADLINE_EXCEEDED") return new DeadlineExceededError(wire.message);
  if (wire.code === "NOT_OWNER") return new NotOwnerError(wire.message);
  if (wire.code === "EXPIRED_BEFORE_START") return new ExpiredBeforeStartError(wire.message);
  const options = wire.details === undefined ? undefined : { details: wire.details };
  return wire.retryable ? new RetryableError(wire.code, wire.message, options) : new HandlerError(wire.code, wire.message, options);
}

/** The wire form of any error thrown on the actor's side; unknown errors never leak their text. */
export function errorToWire(error: unknown): WireError {
  if (error instanceof RuntimeError) {
    return { code: error.code, message: error.message, retryable: error.retryable, ...(error.details === undefined ? {} : { details: error.details }) };
  }
  return { code: "INTERNAL", message: "internal error in actor handler", retryable: false };
}
