import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { freePorts } from "./ports";
import { selfSignedCertificate } from "./certificates";
import { tempDir } from "./temp";

export interface SlapdUser {
  uid: string;
  password: string;
}

export interface SlapdOptions {
  /** The database suffix, e.g. `dc=example,dc=org`; its first component must be `dc=` or `o=`. */
  suffix: string;
  /** Entries `uid=<uid>,ou=people,<suffix>` (inetOrgPerson) with these passwords. */
  users: SlapdUser[];
  /** Also listen for ldaps:// with a fresh self-signed certificate for 127.0.0.1. */
  tls?: boolean;
  /** Entries `cn=<cn>,ou=groups,<suffix>` (groupOfNames), each `member` the DN of a user above. */
  groups?: Array<{ cn: string; members: string[] }>;
}

/** LDIF attribute line; base64 (`::`) always, so any character in a value is safe. */
function ldifLine(attribute: string, value: string): string {
  return `${attribute}:: ${Buffer.from(value, "utf8").toString("base64")}`;
}

/**
 * Every UTF-8 byte of a value as `\XX` (RFC 4514 hexpair): always valid, and independent of
 * the escaping under test in auth/dn.ts.
 */
function hexEscape(value: string): string {
  return [...Buffer.from(value, "utf8")].map((byte) => `\\${byte.toString(16).padStart(2, "0")}`).join("");
}

function baseEntry(suffix: string): string[] {
  const [type, value] = suffix.split(",")[0].split("=") as [string, string];
  if (type.toLowerCase() === "dc")
    return [ldifLine("dn", suffix), "objectClass: dcObject", "objectClass: organization", ldifLine("dc", value), ldifLine("o", value)];
  if (type.toLowerCase() === "o") return [ldifLine("dn", suffix), "objectClass: organization", ldifLine("o", value)];
  throw new Error(`SlapdServer: suffix '${suffix}' must start with dc= or o=`);
}

function run(program: string, args: string[]): string {
  const result = spawnSync(program, args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${program} failed (${result.status ?? result.signal}): ${result.stderr}`);
  return result.stdout;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Debian's OpenLDAP slapd (2.5, back_mdb) on free loopback ports, in a temporary directory,
 * loaded with one entry per user under `ou=people,<suffix>` (passwords stored as {SSHA} hashes).
 * Anonymous clients may only bind: `userPassword` is readable by nobody.
 */
export class SlapdServer {
  private constructor(
    readonly port: number,
    /** ldaps:// port, when started with `tls`. */
    readonly tlsPort: number | undefined,
    /** The self-signed certificate the ldaps:// port presents (its own CA), when started with `tls`. */
    readonly caFile: string | undefined,
    readonly dir: string,
    private readonly child: ChildProcess,
  ) {}

  get url(): string {
    return `ldap://127.0.0.1:${this.port}`;
  }

  get tlsUrl(): string | undefined {
    return this.tlsPort === undefined ? undefined : `ldaps://127.0.0.1:${this.tlsPort}`;
  }

  static async start(options: SlapdOptions): Promise<SlapdServer> {
    const dir = tempDir("slapd");
    const database = join(dir, "db");
    mkdirSync(database);
    const ports = await freePorts(options.tls ? 2 : 1);
    const port = ports[0];
    const tlsPort = options.tls ? ports[1] : undefined;
    const { certFile, keyFile } = options.tls ? selfSignedCertificate(dir, "slapd") : { certFile: join(dir, "cert.pem"), keyFile: join(dir, "key.pem") };

    const conf = join(dir, "slapd.conf");
    writeFileSync(
      conf,
      `${[
        "include /etc/ldap/schema/core.schema",
        "include /etc/ldap/schema/cosine.schema",
        "include /etc/ldap/schema/inetorgperson.schema",
        `pidfile ${join(dir, "slapd.pid")}`,
        `argsfile ${join(dir, "slapd.args")}`,
        "modulepath /usr/lib/ldap",
        "moduleload back_mdb",
        ...(options.tls ? [`TLSCertificateFile ${certFile}`, `TLSCertificateKeyFile ${keyFile}`] : []),
        "database mdb",
        `suffix "${options.suffix}"`,
        `rootdn "cn=admin,${options.suffix}"`,
        "rootpw admin",
        `directory ${database}`,
        "access to attrs=userPassword by anonymous auth by * none",
        "access to * by * read",
      ].join("\n")}\n`,
    );

    const people = `ou=people,${options.suffix}`;
    const entries = [
      baseEntry(options.suffix),
      [ldifLine("dn", people), "objectClass: organizationalUnit", "ou: people"],
      ...options.users.map(({ uid, password }) => [
        ldifLine("dn", `uid=${hexEscape(uid)},${people}`),
        "objectClass: inetOrgPerson",
        ldifLine("uid", uid),
        ldifLine("cn", uid),
        ldifLine("sn", uid),
        ldifLine("userPassword", execFileSync("slappasswd", ["-s", password], { encoding: "utf8" }).trim()),
      ]),
      ...(options.groups?.length ? [[ldifLine("dn", `ou=groups,${options.suffix}`), "objectClass: organizationalUnit", "ou: groups"]] : []),
      ...(options.groups ?? []).map(({ cn, members }) => [
        ldifLine("dn", `cn=${hexEscape(cn)},ou=groups,${options.suffix}`),
        "objectClass: groupOfNames",
        ldifLine("cn", cn),
        ...members.map((uid) => ldifLine("member", `uid=${hexEscape(uid)},${people}`)),
      ]),
    ];
    const ldif = join(dir, "entries.ldif");
    writeFileSync(ldif, `${entries.map((lines) => lines.join("\n")).join("\n\n")}\n`);
    try {
      run("slapadd", ["-f", conf, "-l", ldif]);
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }

    const urls = [`ldap://127.0.0.1:${port}/`, ...(options.tls ? [`ldaps://127.0.0.1:${tlsPort}/`] : [])];
    // -d 0: stay in the foreground (a child we can stop) without debug output.
    const child = spawn("/usr/sbin/slapd", ["-f", conf, "-h", urls.join(" "), "-d", "0"], { stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    child.stderr!.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-8000)));
    const server = new SlapdServer(port, tlsPort, options.tls ? certFile : undefined, dir, child);
    const until = Date.now() + 30_000;
    for (;;) {
      if ((await accepts(port)) && (tlsPort === undefined || (await accepts(tlsPort)))) break;
      if (child.exitCode !== null || Date.now() > until) {
        await server.stop();
        throw new Error(`slapd did not start: ${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return server;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
      clearTimeout(timer);
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A security configuration file (in `dir`) whose only verifier is this directory (user names
 * under ou=people), enforced on `components`: what a PostgreSQL export with direct verification needs.
 * `more.groups` reads group membership (groupOfNames under ou=groups) for authorization rules;
 * `more.sections` adds top-level sections (authorization, identityMapping); `more.verifiers` and
 * `more.credentials` add verifiers and credential types beside the directory (an OAuth provider).
 */
export function ldapSecurityFile(
  dir: string,
  slapd: SlapdServer,
  components: readonly string[],
  more: { groups?: boolean; sections?: Record<string, unknown>; verifiers?: unknown[]; credentials?: unknown[] } = {},
): string {
  const file = join(dir, "security.json");
  const groupSearch = { base: "ou=groups,dc=example,dc=org", filter: "(&(objectClass=groupOfNames)(member={dn}))", attribute: "cn" };
  const configuration = { hostname: `127.0.0.1:${slapd.port}`, rootComponents: "ou=people,dc=example,dc=org", ...(more.groups ? { groupSearch } : {}) };
  writeFileSync(
    file,
    JSON.stringify({
      verifiers: [{ verifier: "ldap", default: "directory", profiles: [{ profile: "directory", configuration }] }, ...(more.verifiers ?? [])],
      credentials: [{ type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] }, ...(more.credentials ?? [])],
      enforcedComponents: components.map((componentName) => ({ componentName })),
      ...more.sections,
    }),
  );
  return file;
}
