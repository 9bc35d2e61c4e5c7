import { isIP } from "node:net";
import { uriEncode } from "../../auth/cloud-signature";
import { S3Error } from "./s3-errors";

/** The S3 operations this door tells apart (path-style addressing: /bucket/key). */
export type S3Operation =
  | { kind: "ListBuckets" }
  | { kind: "ListObjectsV2" | "HeadBucket"; bucket: string; query: URLSearchParams }
  | { kind: "GetObject"; bucket: string; key: string }
  | { kind: "HeadObject"; bucket: string; key: string }
  | { kind: "PutObject"; bucket: string; key: string }
  | { kind: "DeleteObject"; bucket: string; key: string }
  | { kind: "CopyObject"; bucket: string; key: string; source: { bucket: string; key: string } };

/** Query parameters of a presigned URL: checked by the authentication hook, never sent on to the store. */
const signingParameter = /^X-Amz-(Algorithm|Credential|Date|Expires|SignedHeaders|Signature|Security-Token)$/i;
/** What ListObjectsV2 takes; anything else on a bucket is another operation (v1 listing, ACL, policy...). */
const listParameters = new Set(["list-type", "prefix", "delimiter", "max-keys", "continuation-token", "start-after", "fetch-owner", "encoding-type"]);

function decoded(segment: string, what: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new S3Error("InvalidRequest", `the ${what} has a malformed percent escape`);
  }
}

/** The query parameters that say which operation it is: the signing ones and the SDKs' `x-id` label left out. */
function operationParameters(query: URLSearchParams): string[] {
  return [...new Set([...query.keys()])].filter((name) => !signingParameter.test(name) && name !== "x-id");
}

/**
 * Refuses a bucket or key with a `.` or `..` segment (after decoding; `\` counted as a separator, the
 * compatibility forms of the dots too). S3 takes them as literal key text, but a store or a proxy in
 * front of it that resolves dot-segments (RFC 3986, or a file path join, as s3rver does) would take
 * `docs/../hidden/x` to another bucket than the one the export checked against `buckets`.
 */
function refuseDotSegments(name: string, what: string): void {
  if (name.split(/[\\/]/).some((segment) => /^\.{1,2}$/.test(segment.normalize("NFKC"))))
    throw new S3Error("AccessDenied", `${what} with a '.' or '..' segment is not served: a store that resolves it could reach another bucket`);
}

/** `bucket/key` of x-amz-copy-source (optionally with a leading slash; a version is not taken). */
function copySource(header: string): { bucket: string; key: string } {
  const value = decoded(header.replace(/^\//, ""), "x-amz-copy-source");
  const slash = value.indexOf("/");
  if (slash <= 0 || slash === value.length - 1 || value.includes("?versionId=")) throw new S3Error("InvalidArgument", "x-amz-copy-source must be bucket/key");
  const source = { bucket: value.slice(0, slash), key: value.slice(slash + 1) };
  refuseDotSegments(source.bucket, "a copy source bucket");
  refuseDotSegments(source.key, "a copy source key");
  return source;
}

/** S3's bucket naming rules (3-63 of a-z 0-9 . -, starting and ending with a letter or digit). */
export const bucketName = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * The bucket a virtual-host style request names in its Host (`docs.exports.example:9100` with
 * the export's host `exports.example` names `docs`); undefined for path-style requests. An
 * export listening on an address (an IP, or every address) has no host name to put buckets
 * under, so its requests are all path-style.
 */
export function virtualHostBucket(host: string | undefined, exportHost: string): string | undefined {
  const base = exportHost.toLowerCase().replace(/\.$/, "");
  if (host === undefined || base === "" || isIP(base) !== 0 || base === "0.0.0.0" || base === "::") return undefined;
  const name = host.toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "");
  if (!name.endsWith(`.${base}`)) return undefined;
  const bucket = name.slice(0, -base.length - 1);
  if (!bucketName.test(bucket)) throw new S3Error("InvalidRequest", `the Host names '${bucket}', which is not a bucket name`);
  return bucket;
}

/**
 * Which operation a request is, from its method, path and query: path-style (/bucket/key), or
 * virtual-host style when `virtualBucket` (from the Host) is given (/key). Operations this door
 * does not serve are refused as NotImplemented, naming what was asked.
 */
export function s3OperationOf(
  method: string,
  url: string,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  virtualBucket?: string,
): S3Operation {
  const question = url.indexOf("?");
  const sentPath = question < 0 ? url : url.slice(0, question);
  const path = virtualBucket === undefined ? sentPath : `/${uriEncode(virtualBucket)}${sentPath === "/" ? "" : sentPath}`;
  const query = new URLSearchParams(question < 0 ? "" : url.slice(question + 1));
  const extra = operationParameters(query);
  const rest = path.replace(/^\//, "");
  const slash = rest.indexOf("/");
  const bucket = decoded(slash < 0 ? rest : rest.slice(0, slash), "bucket name");
  const key = slash < 0 ? "" : decoded(rest.slice(slash + 1), "object key");
  refuseDotSegments(bucket, "a bucket name");
  refuseDotSegments(key, "an object key");
  if (bucket === "") {
    if (method === "GET" && extra.length === 0) return { kind: "ListBuckets" };
    throw new S3Error("NotImplemented", `${method} on the service is not served by this export (ListBuckets is)`);
  }
  if (key === "") {
    if (method === "GET" && query.get("list-type") === "2" && extra.every((name) => listParameters.has(name))) return { kind: "ListObjectsV2", bucket, query };
    if (method === "HEAD" && extra.length === 0) return { kind: "HeadBucket", bucket, query };
    const what =
      extra.length > 0
        ? `the bucket subresource '${extra.join("', '")}'`
        : method === "GET"
          ? "ListObjects (version 1; use ListObjectsV2)"
          : `${method} on a bucket`;
    throw new S3Error("NotImplemented", `${what} is not served by this export`);
  }
  if (extra.length > 0) throw new S3Error("NotImplemented", `the object subresource or parameter '${extra.join("', '")}' is not served by this export`);
  switch (method) {
    case "GET":
      return { kind: "GetObject", bucket, key };
    case "HEAD":
      return { kind: "HeadObject", bucket, key };
    case "DELETE":
      return { kind: "DeleteObject", bucket, key };
    case "PUT": {
      const source = headers["x-amz-copy-source"];
      if (typeof source === "string") return { kind: "CopyObject", bucket, key, source: copySource(source) };
      return { kind: "PutObject", bucket, key };
    }
    default:
      throw new S3Error("NotImplemented", `${method} on an object is not served by this export`);
  }
}

/** The store's path of a bucket or object, encoded the way S3 signers expect (each segment once). */
export function storePath(bucket: string, key?: string): string {
  return `/${uriEncode(bucket)}${key === undefined ? "" : `/${key.split("/").map(uriEncode).join("/")}`}`;
}

/** The query sent on to the store: the operation's own parameters, without signing ones. */
export function storeQuery(query: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of query) if (!signingParameter.test(name) && name !== "x-id") out[name] = value;
  return out;
}
