import type { IncomingMessage } from "node:http";
import { S3Error } from "./s3-errors";

/** An error document or a bucket listing from the store is read whole only up to this size. */
const maxDocumentBytes = 8 * 1024 * 1024;

/** A store answer read whole (error documents, bucket listings); a larger one is refused rather than buffered. */
export async function readSmall(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > maxDocumentBytes) {
      response.destroy();
      throw new S3Error("InternalError", "the store's answer is larger than this export reads whole");
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A store answer that is not a success, as the error the client gets (HEAD answers carry no document). */
export async function storeFailure(response: IncomingMessage): Promise<S3Error> {
  const status = response.statusCode ?? 502;
  const document = await readSmall(response).catch(() => "");
  return S3Error.fromStore(status, document);
}

/** ListBuckets' document with only the buckets this export serves. */
export function onlyBuckets(document: string, allowed: ReadonlySet<string>): string {
  return document.replace(/<Bucket>([\s\S]*?)<\/Bucket>/g, (element, inner: string) => {
    const name = /<Name>([^<]*)<\/Name>/.exec(inner)?.[1];
    return name !== undefined && allowed.has(name) ? element : "";
  });
}

/** Headers of a store answer that pass to the client unchanged (never a length, checksum or user metadata of a redacted body). */
export function passedHeaders(response: IncomingMessage, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = response.headers[name];
    if (typeof value === "string") out[name] = value;
  }
  return out;
}
