/**
 * A malformed or oversized MySQL packet: the connection it came on cannot be trusted any more.
 * Every decoder in protocols/mysql/ throws this and nothing else on bad input (the fuzz test
 * holds them to it), so a proxy can close the connection on it and treat anything else as a bug.
 */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}
