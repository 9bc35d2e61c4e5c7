import { request as httpRequest } from "node:http";
import { performance } from "node:perf_hooks";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { ThreadCpuSampler } from "../testkit/thread-cpu";

/** What one GET read: bytes and milliseconds. */
export interface TimedGet {
  bytes: number;
  ms: number;
}

/** One GET read to its end as fast as it comes: bytes and milliseconds; throws unless 200 and complete. */
export function timedGet(port: number, path: string): Promise<TimedGet> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: "127.0.0.1", port, path }, (response) => {
      let bytes = 0;
      response.on("data", (chunk: Buffer) => (bytes += chunk.length));
      response.on("end", () =>
        response.statusCode === 200 && response.complete
          ? resolve({ bytes, ms: performance.now() - started })
          : reject(new Error(`GET ${path}: ${response.statusCode}, complete ${response.complete}`)),
      );
      response.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
}

const role = "bench reading client";

/**
 * The bench's reading client on a thread of its own, so that its CPU is told apart from the
 * store's (s3rver runs on the bench's event loop): `threadIds` are its OS thread ids.
 */
export class ReadingClient {
  private constructor(
    private readonly thread: Worker,
    readonly threadIds: string[],
  ) {}

  static async start(): Promise<ReadingClient> {
    const before = new Set(ThreadCpuSampler.threadIds(process.pid));
    const thread = new Worker(__filename, { workerData: role });
    await new Promise<void>((resolve, reject) => {
      thread.once("online", resolve);
      thread.once("error", reject);
    });
    return new ReadingClient(
      thread,
      ThreadCpuSampler.threadIds(process.pid).filter((tid) => !before.has(tid)),
    );
  }

  get(port: number, path: string): Promise<TimedGet> {
    return new Promise((resolve, reject) => {
      this.thread.once("message", (answer: { got?: TimedGet; error?: string }) => (answer.got ? resolve(answer.got) : reject(new Error(answer.error))));
      this.thread.postMessage({ port, path });
    });
  }

  stop(): Promise<number> {
    return this.thread.terminate();
  }
}

if (!isMainThread && workerData === role) {
  parentPort!.on("message", ({ port, path }: { port: number; path: string }) => {
    timedGet(port, path).then(
      (got) => parentPort!.postMessage({ got }),
      (error: unknown) => parentPort!.postMessage({ error: (error as Error).message }),
    );
  });
}
