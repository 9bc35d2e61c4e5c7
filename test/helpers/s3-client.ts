import { lookup as systemLookup, type LookupAddress } from "node:dns";
import { Agent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { S3Client, S3ServiceException, type S3ClientConfig } from "@aws-sdk/client-s3";

/**
 * An S3 client of the AWS SDK on a loopback port, path-style, without retries. `unsigned`: its
 * requests carry no signature at all. Checksums only when required, so a body is sent as it is.
 */
export function s3Client(
  port: number,
  options: {
    region?: string;
    unsigned?: boolean;
    credentials?: { accessKeyId: string; secretAccessKey: string };
    systemClockOffset?: number;
    /** HTTPS to `localhost:port`, trusting this CA (PEM). */
    ca?: string;
  } = {},
): S3Client {
  const config: S3ClientConfig = {
    endpoint: options.ca ? `https://localhost:${port}` : `http://127.0.0.1:${port}`,
    ...(options.ca ? { requestHandler: { httpsAgent: new HttpsAgent({ ca: options.ca }) } } : {}),
    forcePathStyle: true,
    region: options.region ?? "us-east-1",
    // A copy: the SDK marks the object it is given.
    credentials: { ...(options.credentials ?? { accessKeyId: "ANYONE", secretAccessKey: "anything" }) },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 1,
    ...(options.systemClockOffset !== undefined ? { systemClockOffset: options.systemClockOffset } : {}),
    ...(options.unsigned ? { signer: { sign: async <T>(request: T) => request } } : {}),
  };
  return new S3Client(config);
}

/**
 * An S3 client of the AWS SDK in virtual-host style (`forcePathStyle: false`) on
 * `http://<host>:<port>`: the bucket goes into the Host (`docs.localhost:port`). Names under
 * `host` do not resolve on every machine (glibc without systemd-resolved does not resolve
 * `*.localhost`), so its connections send them to 127.0.0.1 with a lookup of their own, which
 * records every name it is asked for in `looked`.
 */
export function virtualHostClient(
  host: string,
  port: number,
  looked: string[],
  credentials: { accessKeyId: string; secretAccessKey: string } = { accessKeyId: "ANYONE", secretAccessKey: "anything" },
  region = "us-east-1",
): S3Client {
  const lookup = (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    looked.push(hostname);
    if (!hostname.endsWith(`.${host}`)) return systemLookup(hostname, options, callback as never);
    const address: LookupAddress = { address: "127.0.0.1", family: 4 };
    if (options.all) callback(null, [address]);
    else callback(null, address.address, address.family);
  };
  return new S3Client({
    endpoint: `http://${host}:${port}`,
    forcePathStyle: false,
    region,
    credentials: { ...credentials },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    maxAttempts: 1,
    requestHandler: { httpAgent: new Agent({ lookup: lookup as never }) },
  });
}

/** The S3 error a command fails with (its code, HTTP status, message); throws if it succeeds. */
export async function s3Failure(promise: Promise<unknown>): Promise<{ code: string; status: number; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof S3ServiceException) return { code: error.name, status: error.$metadata.httpStatusCode ?? 0, message: error.message };
    throw error;
  }
  throw new Error("the command succeeded");
}
