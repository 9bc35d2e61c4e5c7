import { S3Client, S3ServiceException, type S3ClientConfig } from "@aws-sdk/client-s3";

/**
 * An S3 client of the AWS SDK on a loopback port, path-style, without retries. `unsigned`: its
 * requests carry no signature at all. Checksums only when required, so a body is sent as it is.
 */
export function s3Client(
  port: number,
  options: { region?: string; unsigned?: boolean; credentials?: { accessKeyId: string; secretAccessKey: string }; systemClockOffset?: number } = {},
): S3Client {
  const config: S3ClientConfig = {
    endpoint: `http://127.0.0.1:${port}`,
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
