import { performance, type EventLoopUtilization } from "node:perf_hooks";
import type { Worker } from "node:worker_threads";

/** REDACTION_PIPELINE_WAITS=1: every threaded CSV document writes where its pipeline waited to stderr (one line, at its end). */
export const pipelineWaitsOn = process.env.REDACTION_PIPELINE_WAITS === "1";

const ms = (value: number) => Math.round(value * 10) / 10;

/**
 * Where one document's pipeline waited, in milliseconds of wall time: the event loop for the
 * store's next chunk, for the client to take the output, for a worker while every block it may
 * hold is out (the in-flight cap), for the last blocks at the end; the workers for a block (their
 * event loops' idle time). A diagnostic for tuning the scheduling (docs/objectstore-export.md),
 * off by default: a few clock reads per 64 KiB chunk when on.
 */
export class PipelineWaits {
  readonly started = performance.now();
  private readonly loopBefore: EventLoopUtilization = performance.eventLoopUtilization();
  /** The redactor's push awaiting a worker's report because the in-flight cap was reached; with a direct reader, output() awaiting blocks at the workers. */
  capMs = 0;
  /** end() awaiting the last blocks. */
  endMs = 0;
  /** The stream awaiting the input's next chunk (the store); with a direct reader, output() awaiting input while no block is at a worker. */
  inputMs = 0;
  /** The stream suspended in `yield` until its consumer asked for more (the client). */
  outputMs = 0;
  chunks = 0;
  /** Chunks redacted on the calling thread past the inline part because the node had no threads free (REDACTION_MAX_WORKERS). */
  chunksWithoutThreads = 0;
  blocks = 0;
  /** Blocks in flight, summed over dispatches (their mean: how full the pipeline was). */
  inFlightSum = 0;
  /** When the first block's scan came back, from the start of the workers (their start-up). */
  firstScanMs?: number;
  workersStartedAt?: number;
  /** Each worker's event loop use when this document took it: a worker serves documents one after another, its totals are since it started. */
  private readonly workerLoopsBefore = new Map<Worker, EventLoopUtilization>();

  /** The document's workers, once taken: their idle and busy time are counted from now. */
  workersTaken(workers: readonly Worker[]): void {
    for (const worker of workers) this.workerLoopsBefore.set(worker, worker.performance.eventLoopUtilization());
  }

  /** Awaits `waited`, adding the time to the counter `into`. */
  async time<T>(into: "capMs" | "endMs" | "inputMs" | "outputMs", waited: Promise<T>): Promise<T> {
    const from = performance.now();
    try {
      return await waited;
    } finally {
      this[into] += performance.now() - from;
    }
  }

  /** `input`'s chunks, counted, with the time spent awaiting each added to `inputMs`. */
  async *timedInput(input: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    const chunks = input[Symbol.asyncIterator]();
    let done = false;
    try {
      for (;;) {
        const next = await this.time("inputMs", chunks.next());
        if (next.done) break;
        this.chunks++;
        yield next.value;
      }
      done = true;
    } finally {
      // As for-await does: an input left before its end is told (a stream is destroyed).
      if (!done) await chunks.return?.();
    }
  }

  /** The line written at the document's end: totals, the event loop's busy share, each worker's idle and busy time. */
  report(workers: readonly Worker[]): void {
    const loop = performance.eventLoopUtilization(this.loopBefore);
    const workerLoops = workers.map((worker) => {
      const before = this.workerLoopsBefore.get(worker);
      const { idle, active } = before ? worker.performance.eventLoopUtilization(before) : worker.performance.eventLoopUtilization();
      return { idleMs: ms(idle), activeMs: ms(active) };
    });
    const line = {
      wallMs: ms(performance.now() - this.started),
      eventLoop: { activeMs: ms(loop.active), idleMs: ms(loop.idle) },
      inputMs: ms(this.inputMs),
      outputMs: ms(this.outputMs),
      capMs: ms(this.capMs),
      endMs: ms(this.endMs),
      chunksWithoutThreads: this.chunksWithoutThreads,
      chunks: this.chunks,
      blocks: this.blocks,
      meanInFlight: this.blocks > 0 ? ms(this.inFlightSum / this.blocks) : 0,
      firstScanMs: this.firstScanMs === undefined ? undefined : ms(this.firstScanMs),
      workers: workerLoops,
    };
    process.stderr.write(`pipeline waits ${JSON.stringify(line)}\n`);
  }
}
