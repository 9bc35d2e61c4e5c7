import { HttpError } from "../../http/errors";

/** S3's error codes this door answers with, and their HTTP statuses. */
export const s3Errors = {
  AccessDenied: 403,
  InvalidRequest: 400,
  InvalidArgument: 400,
  InvalidRange: 416,
  NoSuchBucket: 404,
  NoSuchKey: 404,
  NotImplemented: 501,
  InternalError: 500,
  ServiceUnavailable: 503,
  SlowDown: 503,
  /** Not one of S3's: a Host this door does not answer to (http/host-check.ts). */
  MisdirectedRequest: 421,
} as const;

export type S3ErrorCode = keyof typeof s3Errors;

/** A refusal or failure answered as S3's XML error document, so that S3 SDKs surface its code and message. */
export class S3Error extends Error {
  readonly status: number;
  constructor(
    readonly code: S3ErrorCode | string,
    message: string,
    options?: ErrorOptions & { status?: number },
  ) {
    super(message, options);
    this.name = "S3Error";
    this.status = options?.status ?? (s3Errors as Record<string, number>)[code] ?? 500;
  }

  /** The store's own error (NoSuchKey, NoSuchBucket...), answered with its code and message under this door's request id. */
  static fromStore(status: number, document: string): S3Error {
    const code = /<Code>([^<]{1,64})<\/Code>/.exec(document)?.[1] ?? (status === 404 ? "NotFound" : status === 403 ? "AccessDenied" : "InternalError");
    const message = /<Message>([^<]{0,1024})<\/Message>/.exec(document)?.[1] ?? `the store answered ${status}`;
    return new S3Error(code, message, { status: status >= 400 && status < 600 ? status : 502 });
  }

  /** A refusal this door decided (not the store's answer, not an outage): audited. */
  get refusal(): boolean {
    return this.status === 403 || this.status === 501 || this.status === 416;
  }
}

function xmlText(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** S3's error document: Code, Message, Resource and RequestId. */
export function s3ErrorDocument(error: { code: string; message: string }, requestId: string, resource: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${xmlText(error.code)}</Code><Message>${xmlText(error.message)}</Message><Resource>${xmlText(resource)}</Resource><RequestId>${xmlText(requestId)}</RequestId></Error>`;
}

/**
 * Any error of a request as the S3 error it is answered with: the authentication hook's
 * (HttpError) say why without the verifier's reason, which goes to the audit log only.
 */
export function s3ErrorOf(error: unknown): S3Error {
  if (error instanceof S3Error) return error;
  if (error instanceof HttpError) {
    switch (error.code) {
      case "ERR_AUTH_REQUIRED":
        return new S3Error("AccessDenied", "this export takes only requests signed with AWS Signature Version 4");
      case "ERR_AUTH_INVALID":
        return new S3Error("AccessDenied", "the request's signature was not accepted (access key, signature, region, clock skew or a signature used before)");
      case "ERR_AUTH_UNSUPPORTED":
        return new S3Error("AccessDenied", `this export takes only AWS Signature Version 4 signed requests: ${error.message}`);
      case "ERR_AUTH_FORBIDDEN":
        return new S3Error("AccessDenied", error.message);
      case "ERR_REQUEST_HOST":
        return new S3Error("MisdirectedRequest", error.message);
      case "ERR_AUTH_UNAVAILABLE":
        return new S3Error("ServiceUnavailable", "the request's signature could not be verified now; try again");
      default:
        return error.statusCode < 500 ? new S3Error("InvalidRequest", error.message) : new S3Error("InternalError", error.message);
    }
  }
  const status = (error as { statusCode?: number }).statusCode;
  if (status !== undefined && status >= 400 && status < 500) return new S3Error("InvalidRequest", "the request is not valid");
  return new S3Error("InternalError", "the request could not be answered; nothing was released");
}
