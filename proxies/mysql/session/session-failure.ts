/** The session cannot go on (a backend message out of step, a decision not made in time): the client gets `error` and the connection ends. */
export class SessionFailure extends Error {
  constructor(
    message: string,
    readonly error: { code: number; sqlState: string; message: string },
  ) {
    super(message);
  }
}
