import { readFileSync } from "node:fs";
import { credsAuthenticator, nkeyAuthenticator, type NodeConnectionOptions } from "@nats-io/transport-node";
import { settings, type NodeConfig } from "./config";
import { StartupError } from "./startup-error";

export type NatsClientOptions = Pick<NodeConnectionOptions, "user" | "pass" | "token" | "authenticator" | "tls">;

function readSecretFile(file: string, setting: { env: string }): Uint8Array {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new StartupError(`cannot read ${file} (${(error as Error).message}): check ${setting.env}`);
  }
}

/**
 * How the node proves itself to NATS: the embedded server's token of this start, or the
 * credentials and TLS settings given for the servers of NATS_URL. Files are read here, at
 * startup, so a missing one stops the node with one line.
 */
export function natsClientOptions(config: NodeConfig, embeddedToken: string | undefined): NatsClientOptions {
  if (embeddedToken) return { token: embeddedToken };
  const options: NatsClientOptions = {};
  if (config.natsUser !== null && config.natsPassword !== null) Object.assign(options, { user: config.natsUser, pass: config.natsPassword });
  if (config.natsToken !== null) options.token = config.natsToken;
  if (config.natsCredsFile) options.authenticator = credsAuthenticator(readSecretFile(config.natsCredsFile, settings.natsCredsFile));
  if (config.natsNkeyFile) {
    const seed = new TextDecoder().decode(readSecretFile(config.natsNkeyFile, settings.natsNkeyFile)).trim();
    if (!/^SU[A-Z2-7]{50,}$/.test(seed))
      throw new StartupError(`${config.natsNkeyFile} does not hold a user nkey seed (SU...): check ${settings.natsNkeyFile.env}`);
    options.authenticator = nkeyAuthenticator(new TextEncoder().encode(seed));
  }
  if (config.natsCaFile || config.natsTlsCert) {
    if (config.natsCaFile) readSecretFile(config.natsCaFile, settings.natsCaFile);
    options.tls = { ...(config.natsCaFile ? { caFile: config.natsCaFile } : {}), ...(config.natsTlsCert ?? {}) };
  }
  return options;
}
