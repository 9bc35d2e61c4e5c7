import { setTimeout as sleep } from "node:timers/promises";
import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { PipelineStreams, PipelineSubjects } from "./subjects";
import { StaleRevisionError } from "../../actors/runtime/errors";
import type { RevisionedKv } from "../../actors/runtime/revisioned-kv";
import type { RecordRedactor } from "./types";
import { answerMessage, encodedAnswer } from "./nats-answer";
import type { NatsCredentialCheck } from "./nats-credentials";

/** Answers published and not yet acknowledged by JetStream, at most. */
const maxInFlight = 1024;
/** How often the progress is stored: what a failover replays, at most (deduplicated on the output stream). */
const checkpointEveryMs = 250;
/** How often answered input is purged from the input stream. */
const purgeEveryMs = 5000;
const retryAfterMs = 1000;

export interface PipelineProgress {
  /** The last input sequence whose answer is stored on the output subject. */
  lastSeq: number;
}

export interface PipelineStreamDeps {
  nc: NatsConnection;
  exportId: string;
  redactor: RecordRedactor;
  credentials: NatsCredentialCheck;
  progress: RevisionedKv<PipelineProgress>;
  log: Logger;
}

interface InFlight {
  seq: number;
  stored: Promise<unknown>;
  done: boolean;
  failed?: unknown;
}

/**
 * The streaming mode of one pipeline export, run by the node that serves it: records published
 * on the input subject are answered on the output subject, one answer per record, in input order
 * (so in order per user). Exactly once: each answer is published with its input's sequence as the
 * message id, the progress (the last input whose answer is stored) is kept in a KV key written
 * only by compare-and-set, and a new owner resumes after it. What it replays was answered less
 * than a checkpoint interval ago, well inside the output stream's duplicate window, so JetStream
 * drops the second copy.
 */
export class PipelineStream {
  private stopped = false;
  private running?: Promise<void>;
  private messages?: ConsumerMessages;
  private readonly key: string;
  /** The stored progress and the revision of its key. */
  private stored: { lastSeq: number; revision: number } = { lastSeq: 0, revision: 0 };
  /** The last input sequence whose answer JetStream acknowledged (all before it too). */
  private answered = 0;
  private lastPurged = 0;
  private lastPurgeAt = 0;
  processed = 0;

  constructor(private readonly deps: PipelineStreamDeps) {
    this.key = deps.exportId;
  }

  start(): void {
    this.running = this.loop();
  }

  /** How far the stream is: records answered by this node, and the last input sequence answered. */
  progress(): { processed: number; lastInputSeq: number } {
    return { processed: this.processed, lastInputSeq: this.answered };
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.runOnce();
      } catch (error) {
        if (this.stopped) break;
        // Another writer moved the progress (a previous owner finishing its last checkpoint), or
        // nothing could be decided or verified now: go on from the stored progress while this
        // node serves the export (the supervisor stops it when it does not). Answers replayed
        // meanwhile carry the same message ids and are dropped as duplicates.
        const why = error instanceof StaleRevisionError ? "the progress was moved by another writer" : (error as Error).name;
        this.deps.log.warn({ exportId: this.deps.exportId, why }, "pipeline stream interrupted; resuming from the stored progress");
      }
      if (!this.stopped) await sleep(retryAfterMs);
    }
  }

  private async runOnce(): Promise<void> {
    const { nc, exportId, progress } = this.deps;
    const read = await progress.read(this.key, 5000);
    this.stored = { lastSeq: read.value?.lastSeq ?? 0, revision: read.revision };
    this.answered = this.stored.lastSeq;
    const js = jetstream(nc);
    const consumer = await js.consumers.get(PipelineStreams.input.name, {
      filter_subjects: PipelineSubjects.input(exportId),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: this.stored.lastSeq + 1,
    });
    if (this.stopped) return;
    const messages = await consumer.consume({ max_messages: 2048 });
    this.messages = messages;
    if (this.stopped) {
      messages.stop();
      return;
    }
    const inFlight: InFlight[] = [];
    let checkpointing: Promise<void> = Promise.resolve();
    let checkpointFailure: unknown;
    const timer = setInterval(() => {
      checkpointing = checkpointing
        .then(() => this.checkpoint())
        .catch((error: unknown) => {
          checkpointFailure = error;
          messages.stop();
        });
    }, checkpointEveryMs);
    const output = PipelineSubjects.output(exportId);
    try {
      for await (const msg of messages) {
        if (this.stopped) break;
        const answer = await answerMessage(msg, "stream", this.deps.credentials, this.deps.redactor);
        const answerHeaders = headers();
        answerHeaders.set("Warden-Input-Seq", String(msg.seq));
        const inputId = correlationId(msg.headers?.get("Nats-Msg-Id"));
        if (inputId) answerHeaders.set("Warden-Input-Msg-Id", inputId);
        const entry: InFlight = {
          seq: msg.seq,
          done: false,
          stored: js.publish(output, encodedAnswer(answer, nc.info?.max_payload), { msgID: `${exportId}.${msg.seq}`, headers: answerHeaders }),
        };
        entry.stored.then(
          () => (entry.done = true),
          (error: unknown) => (entry.failed = error ?? new Error("publish failed")),
        );
        inFlight.push(entry);
        this.processed++;
        if (inFlight.length >= maxInFlight) await inFlight[0]!.stored;
        this.advance(inFlight);
      }
      // Stopping: what was published is acknowledged (or not) before the last checkpoint.
      await Promise.allSettled(inFlight.map((entry) => entry.stored));
      this.advance(inFlight);
    } finally {
      clearInterval(timer);
      messages.stop();
      // A checkpoint of this run must land before the next run reads the progress.
      await checkpointing;
    }
    if (checkpointFailure) throw checkpointFailure;
    await this.checkpoint();
  }

  /** Moves the answered mark over every acknowledged answer at the head; a failed one stops the run (it resumes from the checkpoint). */
  private advance(inFlight: InFlight[]): void {
    while (inFlight.length > 0 && inFlight[0]!.done) this.answered = inFlight.shift()!.seq;
    if (inFlight[0]?.failed) throw inFlight[0].failed;
  }

  private async checkpoint(): Promise<void> {
    if (this.answered <= this.stored.lastSeq) return;
    const lastSeq = this.answered;
    const revision = await this.deps.progress.write(this.key, { lastSeq }, this.stored.revision, 5000);
    this.stored = { lastSeq, revision };
    if (Date.now() - this.lastPurgeAt >= purgeEveryMs && lastSeq > this.lastPurged) {
      this.lastPurgeAt = Date.now();
      // Answered input is not needed again; what is left is what a new owner would replay.
      const jsm = await jetstreamManager(this.deps.nc);
      await jsm.streams.purge(PipelineStreams.input.name, { filter: PipelineSubjects.input(this.deps.exportId), seq: lastSeq + 1 });
      this.lastPurged = lastSeq;
    }
  }

  /** Stops reading, waits for published answers to be acknowledged, and stores the progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.messages?.stop();
    await this.running;
  }
}

/** The longest input `Nats-Msg-Id` copied onto its answer: the answer's headers must fit the room kept for them (nats-answer.ts). */
export const maxCorrelationIdBytes = 256;

/**
 * The input's `Nats-Msg-Id` as its answer's `Warden-Input-Msg-Id`, when it is at most 256 bytes:
 * a longer one would leave the answer too large to publish, and the stream would stop at that record.
 */
export function correlationId(inputId: string | undefined): string | undefined {
  return inputId && Buffer.byteLength(inputId) <= maxCorrelationIdBytes ? inputId : undefined;
}
