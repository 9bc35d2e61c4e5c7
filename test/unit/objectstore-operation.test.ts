import { test } from "node:test";
import assert from "node:assert/strict";
import { formatOf } from "../../proxies/objectstore/object-formats";
import { S3Error } from "../../proxies/objectstore/s3-errors";
import { s3OperationOf, storePath, virtualHostBucket } from "../../proxies/objectstore/s3-operation";
import { onlyBuckets } from "../../proxies/objectstore/store-answers";

const refused = (method: string, url: string, code: string, headers: Record<string, string> = {}) =>
  assert.throws(
    () => s3OperationOf(method, url, headers),
    (error: unknown) => error instanceof S3Error && error.code === code,
    `${method} ${url}`,
  );

test("path-style requests name the operations served; everything else is NotImplemented", () => {
  assert.deepEqual(s3OperationOf("GET", "/", {}), { kind: "ListBuckets" });
  assert.deepEqual(s3OperationOf("GET", "/docs/a%20b/c.csv?x-id=GetObject", {}), { kind: "GetObject", bucket: "docs", key: "a b/c.csv" });
  assert.deepEqual(s3OperationOf("HEAD", "/docs/c.csv", {}), { kind: "HeadObject", bucket: "docs", key: "c.csv" });
  assert.deepEqual(s3OperationOf("PUT", "/docs/c.csv?x-id=PutObject", {}), { kind: "PutObject", bucket: "docs", key: "c.csv" });
  assert.deepEqual(s3OperationOf("DELETE", "/docs/c.csv", {}), { kind: "DeleteObject", bucket: "docs", key: "c.csv" });
  assert.deepEqual(s3OperationOf("PUT", "/docs/c.csv", { "x-amz-copy-source": "/other/a%2Bb.csv" }), {
    kind: "CopyObject",
    bucket: "docs",
    key: "c.csv",
    source: { bucket: "other", key: "a+b.csv" },
  });
  const list = s3OperationOf("GET", "/docs?list-type=2&prefix=p&max-keys=5&X-Amz-Signature=ab", {});
  assert.equal(list.kind, "ListObjectsV2");
  assert.equal(s3OperationOf("HEAD", "/docs", {}).kind, "HeadBucket");
  assert.equal(
    s3OperationOf("GET", "/docs/c.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab", {}).kind,
    "GetObject",
    "presigning parameters name no operation",
  );
  for (const url of [
    "/docs",
    "/docs?acl",
    "/docs?list-type=2&versions",
    "/docs/c.csv?acl",
    "/docs/c.csv?tagging",
    "/docs/c.csv?uploadId=1",
    "/docs/c.csv?versionId=1",
    "/docs/c.csv?response-content-type=text/plain",
    "/docs/c.csv?partNumber=1",
  ])
    refused("GET", url, "NotImplemented");
  for (const [method, url] of [
    ["POST", "/docs?delete"],
    ["POST", "/docs/c.csv?uploads"],
    ["PUT", "/docs"],
    ["DELETE", "/docs"],
    ["PATCH", "/docs/c.csv"],
    ["PUT", "/"],
  ])
    refused(method!, url!, "NotImplemented");
  refused("GET", "/docs/%E0%A4%A.csv", "InvalidRequest");
  // Dot-segments, however written: a store that resolves them would leave the bucket checked against `buckets`.
  for (const [method, url] of [
    ["GET", "/docs/../hidden/c.csv"],
    ["GET", "/docs/..%2Fhidden%2Fc.csv"],
    ["GET", "/docs/%2e%2E/hidden/c.csv"],
    ["GET", "/docs/a/./c.csv"],
    ["GET", "/docs/a\\..\\c.csv"],
    ["GET", "/docs/%EF%BC%8E%EF%BC%8E/c.csv"],
    ["HEAD", "/docs/../hidden/c.csv"],
    ["PUT", "/docs/../hidden/c.csv"],
    ["DELETE", "/docs/x/../../hidden/c.csv"],
    ["GET", "/../hidden/c.csv"],
  ])
    refused(method!, url!, "AccessDenied");
  refused("PUT", "/docs/c.csv", "AccessDenied", { "x-amz-copy-source": "docs/../hidden/c.csv" });
  refused("PUT", "/docs/c.csv", "AccessDenied", { "x-amz-copy-source": "/docs/%2E%2E%2Fhidden%2Fc.csv" });
  assert.throws(() => s3OperationOf("GET", "/..%2Fhidden%2Fc.csv", {}, "docs"), /segment is not served/, "virtual-host style too");
  for (const key of ["x..y.csv", ".hidden.csv", "...", "a./b.csv"])
    assert.deepEqual(s3OperationOf("GET", `/docs/${key}`, {}), { kind: "GetObject", bucket: "docs", key }, `${key}: dots that are not a segment`);
  refused("PUT", "/docs/c.csv", "InvalidArgument", { "x-amz-copy-source": "nobucket" });
  assert.equal(storePath("docs", "a b/(1).csv"), "/docs/a%20b/%281%29.csv");
});

test("virtual-host style: a bucket under the export's host name; never under an address", () => {
  assert.equal(virtualHostBucket("docs.exports.example:9100", "exports.example"), "docs");
  assert.equal(virtualHostBucket("exports.example:9100", "exports.example"), undefined);
  assert.equal(virtualHostBucket("docs.other.example", "exports.example"), undefined);
  assert.equal(virtualHostBucket("docs.127.0.0.1", "127.0.0.1"), undefined);
  assert.equal(virtualHostBucket("docs.localhost", "0.0.0.0"), undefined);
  assert.throws(() => virtualHostBucket("x.exports.example", "exports.example"), S3Error, "a Host that names no bucket is refused");
  assert.deepEqual(s3OperationOf("GET", "/a/b.csv", {}, "docs"), { kind: "GetObject", bucket: "docs", key: "a/b.csv" });
  assert.equal(s3OperationOf("GET", "/?list-type=2", {}, "docs").kind, "ListObjectsV2");
  assert.throws(
    () => s3OperationOf("GET", "/", {}, "docs"),
    /ListObjects \(version 1/,
    "with a bucket in the Host, / is the bucket (a v1 listing), not ListBuckets",
  );
});

test("formats: the stored content type first, then the longest key suffix; overrides add and replace", () => {
  assert.equal(formatOf("text/csv; charset=utf-8", "a.json", undefined), "csv");
  assert.equal(formatOf("binary/octet-stream", "dir/a.ndjson", undefined), "ndjson");
  assert.equal(formatOf("application/octet-stream", "a.JSON", undefined), "json");
  assert.equal(formatOf("image/png", "a.png", undefined), undefined);
  assert.equal(formatOf(undefined, "a.data", { ".data": "csv" }), "csv");
  assert.equal(formatOf(undefined, "a.tar.csv", { ".tar.csv": "ndjson" }), "ndjson");
  assert.equal(formatOf("text/csv", "a.csv", { "text/csv": "ndjson" }), "ndjson");
});

test("ListBuckets keeps only the buckets an export serves", () => {
  const listing =
    "<ListAllMyBucketsResult><Buckets><Bucket><Name>docs</Name><CreationDate>x</CreationDate></Bucket><Bucket><Name>hidden</Name><CreationDate>y</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>";
  assert.equal(
    onlyBuckets(listing, new Set(["docs"])),
    "<ListAllMyBucketsResult><Buckets><Bucket><Name>docs</Name><CreationDate>x</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>",
  );
});
