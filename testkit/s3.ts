import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { freePort } from "./ports";
import { tempDir } from "./temp";

/** s3rver ships no types: what is used of it. */
interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
type S3rverConstructor = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  configureBuckets: Array<{ name: string }>;
  key?: Buffer;
  cert?: Buffer;
}) => S3rverInstance;

/** The default account of s3rver: the only access key it takes for signed requests. */
export const s3rverCredentials = Object.freeze({ accessKeyId: "S3RVER", secretAccessKey: "S3RVER" });

/**
 * A real S3-compatible store (s3rver) on a free loopback port, in its own temporary directory
 * (removed when it stops). It takes unsigned requests, and SigV4 signed with `s3rverCredentials`.
 */
export class S3Store {
  private constructor(
    private readonly server: S3rverInstance,
    readonly port: number,
    private readonly directory: string,
    private readonly tls: boolean,
  ) {}

  /** `tls`: served over HTTPS with this key and certificate (one for `localhost`: the endpoint names it). */
  static async start(buckets: string[], tls?: { key: Buffer; cert: Buffer }): Promise<S3Store> {
    const S3rver = createRequire(__filename)("s3rver") as S3rverConstructor;
    const directory = tempDir("s3rver");
    const port = await freePort();
    const server = new S3rver({ address: "127.0.0.1", port, directory, silent: true, configureBuckets: buckets.map((name) => ({ name })), ...(tls ?? {}) });
    await server.run();
    return new S3Store(server, port, directory, tls !== undefined);
  }

  get endpoint(): string {
    return this.tls ? `https://localhost:${this.port}` : `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    await this.server.close();
    rmSync(this.directory, { recursive: true, force: true });
  }
}
