import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from "node:crypto";
import type { AuthenticationRequest } from "../../protocols/postgres/authentication";
import { encodePasswordMessage, encodeSaslInitialResponse, encodeSaslResponse } from "../../protocols/postgres/password";

/** Why the proxy could not log in to the backend itself; never carries the password. */
export class BackendLoginError extends Error {}

/**
 * The client side of PostgreSQL's password authentication, run by the proxy when it verified the
 * client itself (spec 5.1 direct verification) and logs in to the backend with the export's or
 * the client's identity: cleartext, md5 and SCRAM-SHA-256 (RFC 5802, 7677; no channel binding,
 * the backend link being plain TCP).
 */
export class BackendLogin {
  private scram?: { clientFirstBare: string; nonce: string; serverSignature?: Buffer; verified?: boolean };

  constructor(
    private readonly user: string,
    private readonly password: string,
  ) {}

  /** The message that answers the backend's request (empty: nothing to send, as after SASLFinal); undefined once the backend said AuthenticationOk. */
  answer(request: AuthenticationRequest): Buffer | undefined {
    switch (request.kind) {
      case "ok":
        if (this.scram && !this.scram.verified) throw new BackendLoginError("the backend ended SCRAM without proving it knows the password");
        return undefined;
      case "cleartext":
        return encodePasswordMessage(this.password);
      case "md5": {
        const inner = md5Hex(Buffer.from(this.password + this.user, "utf8"));
        return encodePasswordMessage(`md5${md5Hex(Buffer.concat([Buffer.from(inner, "ascii"), request.salt]))}`);
      }
      case "sasl": {
        if (!request.mechanisms.includes("SCRAM-SHA-256"))
          throw new BackendLoginError(`the backend offers no SASL mechanism the proxy speaks (${request.mechanisms.join(", ")})`);
        const nonce = randomBytes(18).toString("base64");
        const clientFirstBare = `n=,r=${nonce}`;
        this.scram = { clientFirstBare, nonce };
        return encodeSaslInitialResponse("SCRAM-SHA-256", Buffer.from(`n,,${clientFirstBare}`, "utf8"));
      }
      case "sasl-continue":
        return encodeSaslResponse(this.scramFinal(request.data.toString("utf8")));
      case "sasl-final":
        this.checkServerFinal(request.data.toString("utf8"));
        return Buffer.alloc(0);
      case "other":
        throw new BackendLoginError(`the backend asks for authentication method ${request.code}, which the proxy cannot answer`);
    }
  }

  private scramFinal(serverFirst: string): Buffer {
    if (!this.scram) throw new BackendLoginError("SCRAM continuation without a start");
    const attributes = scramAttributes(serverFirst);
    const serverNonce = attributes.get("r");
    const salt = attributes.get("s");
    const iterations = Number(attributes.get("i"));
    if (
      !serverNonce?.startsWith(this.scram.nonce) ||
      serverNonce.length === this.scram.nonce.length ||
      !salt ||
      !Number.isInteger(iterations) ||
      iterations < 1 ||
      iterations > 10_000_000
    ) {
      throw new BackendLoginError("the backend's SCRAM challenge is not valid");
    }
    const saltedPassword = pbkdf2Sync(Buffer.from(this.password.normalize("NFKC"), "utf8"), Buffer.from(salt, "base64"), iterations, 32, "sha256");
    const clientKey = hmac(saltedPassword, "Client Key");
    const storedKey = createHash("sha256").update(clientKey).digest();
    const withoutProof = `c=biws,r=${serverNonce}`;
    const authMessage = `${this.scram.clientFirstBare},${serverFirst},${withoutProof}`;
    const clientSignature = hmac(storedKey, authMessage);
    const proof = Buffer.alloc(clientKey.length);
    for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ clientSignature[i]!;
    this.scram.serverSignature = hmac(hmac(saltedPassword, "Server Key"), authMessage);
    return Buffer.from(`${withoutProof},p=${proof.toString("base64")}`, "utf8");
  }

  private checkServerFinal(serverFinal: string): void {
    const attributes = scramAttributes(serverFinal);
    const verifier = Buffer.from(attributes.get("v") ?? "", "base64");
    const expected = this.scram?.serverSignature;
    if (!expected || verifier.length !== expected.length || !timingSafeEqual(verifier, expected))
      throw new BackendLoginError("the backend's SCRAM signature is wrong: it does not know the password");
    this.scram!.verified = true;
  }
}

function md5Hex(bytes: Buffer): string {
  return createHash("md5").update(bytes).digest("hex");
}

function hmac(key: Buffer, text: string): Buffer {
  return createHmac("sha256", key).update(text, "utf8").digest();
}

function scramAttributes(message: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const part of message.split(",")) {
    const eq = part.indexOf("=");
    if (eq === 1) attributes.set(part[0]!, part.slice(2));
  }
  return attributes;
}
