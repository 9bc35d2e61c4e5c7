import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import { findNatsServer } from "../../service/nats-server";
import { nodeEnvironment, nodeFlags } from "../../service/node-flags";
import { freePort } from "../../testkit/ports";
import { tempDir } from "../../testkit/temp";

const root = join(__dirname, "..", "..", "..");
const deploy = join(root, "deploy");

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

function manifests(): Manifest[] {
  const dir = join(deploy, "kubernetes");
  return readdirSync(dir)
    .filter((file) => file.endsWith(".yaml"))
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(dir, file), "utf8")).map((document) => {
        assert.deepEqual(document.errors, [], file);
        return document.toJS() as Manifest;
      }),
    );
}

/** Checks a manifest against the Kubernetes API's JSON schema (kubernetes-models, offline); throws when it does not conform. */
async function validate(manifest: Manifest): Promise<void> {
  const [group, version] = manifest.apiVersion.includes("/") ? manifest.apiVersion.split("/") : [undefined, manifest.apiVersion];
  const module = (await import(`kubernetes-models/${group ? `${group}/` : ""}${version}/${manifest.kind}`)) as Record<
    string,
    new (
      value: unknown,
    ) => { validate(): void }
  >;
  new module[manifest.kind]!(manifest).validate();
}

const byKind = (all: Manifest[], kind: string, name: string) => {
  const found = all.find((m) => m.kind === kind && m.metadata.name === name);
  assert.ok(found, `${kind} ${name}`);
  return found;
};

test("Kubernetes manifests conform to the Kubernetes schemas, and a broken one does not", async () => {
  const all = manifests();
  assert.ok(all.length >= 8);
  for (const manifest of all) await validate(manifest);
  const broken = structuredClone(byKind(all, "Deployment", "warden"));
  broken.spec.template.spec.containers[0].ports[0].containerPort = "http";
  await assert.rejects(validate(broken), /containerPort must be integer/);
});

test("Kubernetes: warden nodes with readiness and liveness probes, a disruption budget, Services, and a 3-server NATS StatefulSet they all name", () => {
  const all = manifests();
  const deployment = byKind(all, "Deployment", "warden");
  const pod = deployment.spec.template;
  const container = pod.spec.containers[0];
  assert.equal(container.readinessProbe.httpGet.path, "/readyz");
  assert.equal(container.livenessProbe.httpGet.path, "/healthz");
  assert.equal(pod.spec.securityContext.runAsNonRoot, true);
  assert.ok(pod.spec.terminationGracePeriodSeconds >= 30, "time to hand actors over");
  const env = Object.fromEntries(
    container.env.filter((e: { value?: string }) => e.value !== undefined).map((e: { name: string; value: string }) => [e.name, e.value]),
  );
  assert.equal(env.JS_REPLICAS, "3");
  assert.equal(env.HOST, "0.0.0.0");

  const nats = byKind(all, "StatefulSet", "warden-nats");
  assert.equal(nats.spec.replicas, 3);
  const routes = Array.from({ length: 3 }, (_, i) => `warden-nats-${i}.${nats.spec.serviceName}`);
  for (const route of routes) assert.ok(env.NATS_URL.includes(`nats://${route}:4222`), `NATS_URL names ${route}`);
  const natsConf = byKind(all, "ConfigMap", "warden-nats") as unknown as { data: Record<string, string> };
  for (const route of routes) assert.ok(natsConf.data["nats.conf"]!.includes(`nats://${route}:6222`));
  byKind(all, "Service", nats.spec.serviceName);

  const selects = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
  for (const name of ["warden", "warden-nats"]) {
    const budget = byKind(all, "PodDisruptionBudget", name);
    const target = name === "warden" ? pod : nats.spec.template;
    assert.ok(selects(budget.spec.selector.matchLabels, target.metadata.labels), `the ${name} budget selects its pods`);
  }
  for (const service of all.filter((m) => m.kind === "Service")) {
    const target = service.metadata.name.startsWith("warden-nats") ? nats.spec.template : pod;
    assert.ok(selects(service.spec.selector, target.metadata.labels), `${service.metadata.name} selects pods`);
    const named = new Set(
      target.spec.containers.flatMap((c: { ports: Array<{ name: string; containerPort: number }> }) => c.ports.flatMap((p) => [p.name, p.containerPort])),
    );
    for (const port of service.spec.ports)
      assert.ok(named.has(port.targetPort), `${service.metadata.name}: target port ${port.targetPort} is a container port`);
  }
});

test("compose: three clustered nats-servers and two warden nodes that name all three", () => {
  const compose = parse(readFileSync(join(deploy, "compose.yaml"), "utf8"), { merge: true }) as {
    services: Record<
      string,
      {
        command?: string[];
        environment?: Record<string, string>;
        build?: { context: string; dockerfile: string };
        depends_on?: Record<string, { condition: string }>;
      }
    >;
  };
  const nats = Object.keys(compose.services).filter((name) => name.startsWith("nats-"));
  const nodes = Object.keys(compose.services).filter((name) => name.startsWith("warden-"));
  assert.deepEqual(nats, ["nats-1", "nats-2", "nats-3"]);
  assert.deepEqual(nodes, ["warden-1", "warden-2"]);
  for (const name of nats) {
    const command = compose.services[name]!.command!;
    assert.ok(command.includes("--jetstream"));
    const routes = command[command.indexOf("--routes") + 1]!;
    for (const other of nats.filter((n) => n !== name)) assert.ok(routes.includes(`nats://${other}:6222`), `${name} routes to ${other}`);
  }
  const ids = new Set<string>();
  for (const name of nodes) {
    const service = compose.services[name]!;
    assert.equal(service.environment!.JS_REPLICAS, "3");
    for (const server of nats) assert.ok(service.environment!.NATS_URL!.includes(`nats://${server}:4222`));
    ids.add(service.environment!.NODE_ID!);
    assert.ok(existsSync(join(deploy, service.build!.context, service.build!.dockerfile)), "builds deploy/Dockerfile");
    for (const server of nats) assert.equal(service.depends_on![server]!.condition, "service_healthy");
  }
  assert.equal(ids.size, nodes.length, "unique node ids");
});

test("systemd unit: the node binary comes from the environment (NODE_BIN), and SIGTERM drains", () => {
  const unit = readFileSync(join(deploy, "warden.service"), "utf8");
  const directives = unit.split("\n").filter((line) => /^[A-Z]\w*=/.test(line));
  const value = (key: string) => directives.filter((line) => line.startsWith(`${key}=`)).map((line) => line.slice(key.length + 1));
  // systemd expands its own ${NODE_BIN}; the escaped one below is that text, not a template placeholder.
  assert.deepEqual(
    value("ExecStart"),
    [`/usr/bin/env \${NODE_BIN} ${nodeFlags.join(" ")} /opt/warden/dist/service/main.js`],
    "launched with the node's V8 flags",
  );
  assert.ok(value("Environment").includes("NODE_BIN=node"), "a default");
  for (const [name, setting] of Object.entries(nodeEnvironment)) assert.ok(value("Environment").includes(`${name}=${setting}`), `the node's ${name}`);
  assert.ok(value("EnvironmentFile").includes("-/etc/default/warden"), "per machine");
  assert.deepEqual(value("KillSignal"), ["SIGTERM"]);
});

test("`npm start` and deploy/local-cluster.sh launch the node with its V8 flags and its environment", () => {
  const launch = `node ${nodeFlags.join(" ")} dist/service/main.js`;
  const start = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts.start!;
  assert.ok(start.includes(launch), `npm start: ${start}`);
  const cluster = readFileSync(join(deploy, "local-cluster.sh"), "utf8");
  assert.ok(cluster.includes(`exec nohup ${launch}`), "local-cluster.sh starts each node with the flags");
  for (const [name, setting] of Object.entries(nodeEnvironment)) {
    assert.ok(start.includes(`${name}=${setting} ${launch}`), `npm start sets ${name}`);
    assert.match(cluster, new RegExp(`export [^\\n]*(\\\\\\n[^\\n]*)*\\b${name}=${setting}\\b`), `local-cluster.sh exports ${name}`);
  }
});

test("the image's root filesystem, built by the Dockerfile's own steps, starts a node that passes the image's HEALTHCHECK", { timeout: 600_000 }, async () => {
  const out = tempDir("rootfs");
  const built = spawnSync(process.execPath, [join(root, "scripts", "build-rootfs.mjs"), out], { encoding: "utf8", timeout: 540_000 });
  assert.equal(built.status, 0, built.stderr);
  const image = JSON.parse(built.stdout) as {
    root: string;
    workdir: string;
    env: Record<string, string>;
    user: string;
    entrypoint: string[];
    healthcheck: string[];
  };
  assert.equal(image.user, "node", "not root");
  assert.ok(!existsSync(join(image.workdir, "node_modules", "typescript")), "no devDependencies");
  assert.ok(!existsSync(join(image.workdir, "dist", "test")), "no tests");
  assert.ok(existsSync(join(image.workdir, "node_modules", "fastify")));
  assert.deepEqual(image.entrypoint.slice(0, 1 + nodeFlags.length), ["node", ...nodeFlags], "launched with the node's V8 flags");
  for (const [name, setting] of Object.entries(nodeEnvironment)) assert.equal(image.env[name], setting, `the node's ${name}`);

  // The image's environment, with this machine's ports and paths.
  const port = await freePort();
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ...image.env,
    HOST: "127.0.0.1",
    PORT: String(port),
    NATS_PORT: String(await freePort()),
    DATA_DIR: join(image.root, image.env.DATA_DIR!),
    NATS_SERVER_BIN: findNatsServer() ?? "",
  };
  const node = spawn(process.execPath, image.entrypoint.slice(1), { cwd: image.workdir, env, stdio: ["ignore", "pipe", "pipe"] });
  const log: string[] = [];
  node.stdout!.on("data", (chunk: Buffer) => log.push(chunk.toString()));
  node.stderr!.on("data", (chunk: Buffer) => log.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => node.once("exit", (code) => resolve(code)));
  try {
    const healthy = () => spawnSync(process.execPath, image.healthcheck.slice(1), { env, timeout: 5000 }).status === 0;
    const deadline = Date.now() + 30_000;
    while (!healthy()) {
      assert.equal(node.exitCode, null, `the node exited: ${log.join("")}`);
      assert.ok(Date.now() < deadline, `not healthy in time: ${log.join("").slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
    assert.equal(image.healthcheck[0], "node");
  } finally {
    node.kill("SIGTERM");
  }
  assert.equal(await exited, 0, "SIGTERM stops it cleanly");
});
