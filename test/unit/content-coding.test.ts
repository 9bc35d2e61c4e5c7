import { test } from "node:test";
import assert from "node:assert/strict";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { text } from "node:stream/consumers";
import { Readable } from "node:stream";
import { contentDecoder } from "../../http/content-coding";

test("no coding to undo: absent, empty, identity (any case, with spaces)", () => {
  for (const header of [undefined, "", " ", "identity", "IDENTITY", " identity , identity "])
    assert.equal(contentDecoder(header), null, JSON.stringify(header));
});

test("gzip, x-gzip, deflate and br are decoded (any case)", async () => {
  const plain = "users.id,users.email\naccepted,a@x\n";
  for (const [header, encoded] of [
    ["gzip", gzipSync(plain)],
    ["X-GZIP", gzipSync(plain)],
    ["deflate", deflateSync(plain)],
    [" br ", brotliCompressSync(plain)],
    [["gzip"], gzipSync(plain)],
  ] as const) {
    const decoder = contentDecoder(header as string | string[]);
    assert.ok(decoder, JSON.stringify(header));
    assert.equal(await text(Readable.from([encoded]).pipe(decoder())), plain, JSON.stringify(header));
  }
});

test("any other coding, or more than one, is not read at all (undefined)", () => {
  for (const header of ["zstd", "compress", "aws-chunked", "gzip, br", "gzip,gzip", ["gzip", "br"], "gzip;q=1"])
    assert.equal(contentDecoder(header), undefined, JSON.stringify(header));
});
