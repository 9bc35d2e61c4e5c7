/** The limits a wire export puts on connections that have not logged in yet. */
export interface LoginSlotLimits {
  /** Connections logging in at once, per export. */
  maxLoggingIn: number;
  /** Connections logging in at once from one client address. */
  maxLoggingInPerAddress: number;
  /** A connection not logged in by then is closed by its session; its place is freed then at the latest. */
  loginTimeoutMs: number;
}

export type LoginSlotRefusal = "logging-in" | "address";

/** A place is forgotten this long after the login timeout even if no word came (a worker that died with it). */
const graceMs = 5_000;

/**
 * The places of a wire export's connections that are still logging in (startup, TLS,
 * authentication), apart from logged-in sessions: unauthenticated clients holding connections
 * open cannot take the places of clients that log in, and one address cannot take them all.
 * A wire door (PostgreSQL, MySQL) takes a place when it accepts a connection and frees it when
 * the connection logs in or ends.
 */
export class LoginSlots {
  private readonly held = new Map<string, { address: string; until: number }>();
  private readonly byAddress = new Map<string, number>();

  constructor(private readonly limits: LoginSlotLimits) {}

  /** Connections logging in now. */
  get size(): number {
    this.expire();
    return this.held.size;
  }

  /** Takes a place for this connection, or says why there is none. */
  take(connectionId: string, address: string | undefined): LoginSlotRefusal | undefined {
    this.expire();
    const from = address ?? "unknown";
    if (this.held.size >= this.limits.maxLoggingIn) return "logging-in";
    if ((this.byAddress.get(from) ?? 0) >= this.limits.maxLoggingInPerAddress) return "address";
    this.held.set(connectionId, { address: from, until: Date.now() + this.limits.loginTimeoutMs + graceMs });
    this.byAddress.set(from, (this.byAddress.get(from) ?? 0) + 1);
    return undefined;
  }

  /** The connection logged in or ended: its place is free. */
  free(connectionId: string): void {
    const place = this.held.get(connectionId);
    if (!place) return;
    this.held.delete(connectionId);
    const left = (this.byAddress.get(place.address) ?? 1) - 1;
    if (left > 0) this.byAddress.set(place.address, left);
    else this.byAddress.delete(place.address);
  }

  private expire(): void {
    const now = Date.now();
    for (const [connectionId, place] of this.held) if (place.until < now) this.free(connectionId);
  }
}

/** What a refusal tells the client. */
export function loginSlotMessage(refusal: LoginSlotRefusal, limits: LoginSlotLimits): string {
  return refusal === "address"
    ? `too many connections from your address are logging in (at most ${limits.maxLoggingInPerAddress}); try again`
    : `too many connections are logging in to this export (at most ${limits.maxLoggingIn}); try again`;
}
