import type { Msg } from "@nats-io/transport-node";
import { refusedAnswer } from "./refused";
import type { PipelineAnswer, RecordRedactor } from "./types";
import type { NatsCredentialCheck } from "./nats-credentials";

/** Room kept under the server's max_payload for the headers of an answer. */
const headerRoom = 1024;

/** An answer as sent (UTF-8, encoded once); one that would not fit in a NATS message becomes a refusal (it says why, with no values). */
export function encodedAnswer(answer: PipelineAnswer, maxPayload = 1024 * 1024): Buffer {
  const encoded = Buffer.from(JSON.stringify(answer));
  if (encoded.length <= maxPayload - headerRoom) return encoded;
  return Buffer.from(
    JSON.stringify(
      refusedAnswer("ERR_PIPELINE_RECORD_INVALID", `the answer would be larger than the NATS server's max_payload (${maxPayload} bytes): send smaller records`),
    ),
  );
}

/**
 * The credentials could not be verified now, or their login not audited (a full audit stream): the record is not
 * answered (a stream retries it, a request says so with the code).
 */
export class CredentialsUnavailable extends Error {
  constructor(
    message: string,
    readonly code: "ERR_AUTH_UNAVAILABLE" | "ERR_AUDIT_UNAVAILABLE" = "ERR_AUTH_UNAVAILABLE",
  ) {
    super(message);
  }
}

/**
 * The answer to one NATS message of a pipeline export, request or streamed: its credentials,
 * its JSON, its redaction. Throws CredentialsUnavailable, or the redactor's PipelineUnavailable,
 * when it cannot be answered now.
 */
export async function answerMessage(
  msg: Pick<Msg, "headers" | "json">,
  door: "request" | "stream",
  credentials: NatsCredentialCheck,
  redactor: RecordRedactor,
): Promise<PipelineAnswer> {
  // No promise per message when nothing is enforced (once the minute's record is stored): the stream's hot path.
  const open = credentials.enforced ? credentials.check(msg.headers, door) : credentials.open(door);
  const access = open instanceof Promise ? await open : open;
  if (!access.ok && (access.code === "ERR_AUTH_UNAVAILABLE" || access.code === "ERR_AUDIT_UNAVAILABLE"))
    throw new CredentialsUnavailable(access.reason, access.code);
  if (!access.ok) return refusedAnswer(access.code, access.reason);
  let record: unknown;
  try {
    record = msg.json<unknown>();
  } catch {
    return refusedAnswer("ERR_PIPELINE_RECORD_INVALID", "the message is not JSON");
  }
  const [answer] = await redactor.redactAll([record]);
  return answer!;
}
