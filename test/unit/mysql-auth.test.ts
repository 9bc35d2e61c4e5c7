import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash, createPrivateKey, generateKeyPairSync, sign } from "node:crypto";
import {
  cachingSha2Hash,
  cachingSha2Response,
  cleartextPasswordResponse,
  passwordFromCleartext,
  passwordFromRsaEncrypted,
  rsaEncryptedPassword,
  verifyCachingSha2,
} from "../../protocols/mysql/caching-sha2-password";
import { ed25519PasswordHash, ed25519PublicKey, ed25519Response, verifyEd25519Response } from "../../protocols/mysql/client-ed25519";
import { nativePasswordHash, nativePasswordResponse, verifyNativePassword } from "../../protocols/mysql/native-password";

const sha1 = (data: Buffer) => createHash("sha1").update(data).digest();
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest();
const scramble = Buffer.from("3a1c5e0f2b4d6a7c9e8f0123456789abcdef0123", "hex");

describe("MySQL auth plugins", () => {
  test("mysql_native_password: SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))), checked as a server checks it", () => {
    const response = nativePasswordResponse("s3cret", scramble);
    assert.equal(response.length, 20);
    // The formula written out again, independently of the module's helpers.
    const stage1 = sha1(Buffer.from("s3cret"));
    const mask = createHash("sha1").update(scramble).update(sha1(stage1)).digest();
    assert.deepEqual(response, Buffer.from(stage1.map((byte, i) => byte ^ mask[i]!)));
    // The hash servers store, mysql.user's '*' + hex: PASSWORD('password') is the well-known *2470C0C0….
    assert.equal(`*${nativePasswordHash("password").toString("hex").toUpperCase()}`, "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19");
    assert.equal(verifyNativePassword(response, scramble, nativePasswordHash("s3cret")), true);
    assert.equal(verifyNativePassword(response, scramble, nativePasswordHash("s3cret!")), false, "another password");
    assert.equal(verifyNativePassword(nativePasswordResponse("s3cret", Buffer.alloc(20)), scramble, nativePasswordHash("s3cret")), false, "another scramble");
    assert.deepEqual(nativePasswordResponse("", scramble), Buffer.alloc(0), "an empty password answers nothing");
    // Servers append a NUL to the scramble in AuthSwitchRequest; only 20 bytes count.
    assert.deepEqual(nativePasswordResponse("s3cret", Buffer.concat([scramble, Buffer.alloc(1)])), response);
  });

  test("caching_sha2_password fast auth: SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + scramble)", () => {
    const response = cachingSha2Response("s3cret", scramble);
    const stage1 = sha256(Buffer.from("s3cret"));
    const mask = sha256(Buffer.concat([sha256(stage1), scramble]));
    assert.deepEqual(response, Buffer.from(stage1.map((byte, i) => byte ^ mask[i]!)));
    assert.equal(verifyCachingSha2(response, scramble, cachingSha2Hash("s3cret")), true);
    assert.equal(verifyCachingSha2(response, scramble, cachingSha2Hash("other")), false);
    assert.equal(verifyCachingSha2(response.subarray(1), scramble, cachingSha2Hash("s3cret")), false, "a short response");
  });

  test("caching_sha2_password full auth: cleartext over TLS; RSA-OAEP of (pw + NUL) XOR scramble", () => {
    assert.deepEqual(cleartextPasswordResponse("pw"), Buffer.from("pw\0"));
    assert.deepEqual(passwordFromCleartext(Buffer.from("pw\0")), Buffer.from("pw"));
    const { publicKey, privateKey } = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      publicKeyEncoding: { type: "spki", format: "pem" },
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
    });
    const encrypted = rsaEncryptedPassword("a much longer password than the twenty-byte scramble", scramble, publicKey);
    assert.equal(encrypted.length, 256, "one RSA-2048 block");
    assert.equal(passwordFromRsaEncrypted(encrypted, scramble, privateKey).toString(), "a much longer password than the twenty-byte scramble");
    // Bound to the scramble: decrypted under another, the XOR gives other bytes.
    assert.notEqual(passwordFromRsaEncrypted(encrypted, Buffer.alloc(20, 1), privateKey).toString(), "a much longer password than the twenty-byte scramble");
    assert.notDeepEqual(rsaEncryptedPassword("pw", scramble, publicKey), rsaEncryptedPassword("pw", scramble, publicKey), "OAEP is randomised");
  });

  test("client_ed25519: the public keys MariaDB's own test suite prints for these passwords", () => {
    // mysql-test/suite/plugins/r/auth_ed25519.result in MariaDB/server: SELECT ed25519_password('…').
    assert.equal(ed25519PasswordHash("foo"), "vubFBzIrapbfHct1/J72dnUryz5VS7lA6XHH8sIx4TI");
    assert.equal(ed25519PasswordHash("foobar"), "qv2mG6HWCuy32Slb5xhV4THStewNz2VINVPbgk+XAJ8");
    assert.equal(ed25519PasswordHash("foo bar"), "Y5fV74JAVRMOK2cdnUsYS+WW9sXaaL/o+6WGKOgqnzc");
    assert.equal(ed25519PasswordHash("bar"), "pfzkeWMzkTefY1oshXS+/kATeN51M+4jxi3/cbyTd10");
    assert.equal(ed25519PasswordHash("secret"), "ZIgUREUg5PVgQ6LskhXmO+eZLS0nC8be6HPjYWR4YJY");
  });

  test("client_ed25519: signatures node:crypto verifies, and node:crypto's own when the password is a 32-byte seed", () => {
    const challenge = Buffer.from("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", "hex");
    for (const password of ["secret", "", "x".repeat(100), "pässwörd"]) {
      const signature = ed25519Response(password, challenge);
      assert.equal(signature.length, 64);
      assert.equal(verifyEd25519Response(signature, challenge, ed25519PublicKey(password)), true, `'${password}'`);
      assert.equal(verifyEd25519Response(signature, challenge, ed25519PublicKey(`${password}?`)), false, `'${password}' against another key`);
      const tampered = Buffer.from(signature);
      tampered[40]! ^= 1;
      assert.equal(verifyEd25519Response(tampered, challenge, ed25519PublicKey(password)), false);
    }
    // RFC 8032 keys expand a 32-byte seed with SHA-512, as MariaDB expands the password: equal signatures.
    const seed = Buffer.from("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "hex");
    const key = createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]), format: "der", type: "pkcs8" });
    assert.deepEqual(ed25519Response(seed, challenge), sign(null, challenge, key));
    // RFC 8032 7.1 TEST 1: this seed's public key.
    assert.equal(ed25519PublicKey(seed).toString("hex"), "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    assert.equal(verifyEd25519Response(Buffer.alloc(64), challenge, Buffer.alloc(32, 0xff)), false, "a key that is not a point");
  });
});
