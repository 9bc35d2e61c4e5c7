#!/usr/bin/env node
// Builds the image's root filesystem from deploy/Dockerfile without a container engine: each
// stage gets a directory, and the file's own COPY and RUN steps are replayed into it (RUN in
// the stage's WORKDIR, with its ENV). What only a container engine can do is checked instead:
// `RUN apt-get ...` packages must be installed on this machine, `RUN mkdir -p` makes its paths
// inside the stage, and `chown`, `USER` and the base image are left to the real build.
//   node scripts/build-rootfs.mjs <out-dir>   -> prints {root, workdir, env, entrypoint, healthcheck}
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join, dirname, posix } from "node:path";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = process.argv[2];
if (!out) {
  process.stderr.write("usage: node scripts/build-rootfs.mjs <out-dir>\n");
  process.exit(2);
}

function fail(message) {
  process.stderr.write(`build-rootfs: ${message}\n`);
  process.exit(1);
}

/** Instructions with continuation lines joined and comments dropped. */
function instructions(text) {
  const joined = text.replace(/\\\n/g, " ");
  return joined
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"))
    .map((line) => {
      const space = line.indexOf(" ");
      return { op: line.slice(0, space).toUpperCase(), args: line.slice(space + 1).trim() };
    });
}

const stages = new Map();
let stage;
const inStage = (s, path) => join(s.root, posix.resolve(s.workdir, path));

for (const { op, args } of instructions(readFileSync(join(repo, "deploy", "Dockerfile"), "utf8"))) {
  if (op === "FROM") {
    const name = / AS (\S+)$/i.exec(args)?.[1] ?? "final";
    stage = { name, root: join(out, name), workdir: "/", env: {}, user: "root" };
    rmSync(stage.root, { recursive: true, force: true });
    mkdirSync(stage.root, { recursive: true });
    stages.set(name, stage);
  } else if (op === "WORKDIR") {
    stage.workdir = posix.resolve(stage.workdir, args);
    mkdirSync(join(stage.root, stage.workdir), { recursive: true });
  } else if (op === "ENV") {
    for (const pair of args.split(/\s+/)) {
      const [key, ...value] = pair.split("=");
      stage.env[key] = value.join("=");
    }
  } else if (op === "COPY") {
    const words = args.split(/\s+/);
    const from = words[0].startsWith("--from=") ? stages.get(words.shift().slice("--from=".length)) : undefined;
    if (words.length < 2) fail(`COPY needs a source and a destination: ${args}`);
    const dest = words.pop();
    for (const source of words) {
      const path = from ? join(from.root, source) : join(repo, source);
      if (!existsSync(path)) fail(`COPY source ${source} does not exist${from ? ` in stage ${from.name}` : ""}`);
      const target = dest.endsWith("/") || words.length > 1 ? join(inStage(stage, dest), posix.basename(source)) : inStage(stage, dest);
      mkdirSync(dirname(target), { recursive: true });
      cpSync(path, target, { recursive: statSync(path).isDirectory(), dereference: false });
    }
  } else if (op === "RUN") {
    if (args.startsWith("apt-get")) {
      const packages =
        /install\s+(.*?)(?:&&|$)/
          .exec(args)?.[1]
          .split(/\s+/)
          .filter((word) => word && !word.startsWith("-")) ?? [];
      for (const name of packages) {
        if (spawnSync("dpkg", ["-s", name], { stdio: "ignore" }).status !== 0)
          fail(`the image installs Debian package ${name}; install it here too ('apt-get install ${name}')`);
      }
    } else if (args.startsWith("mkdir -p ")) {
      for (const path of args.slice("mkdir -p ".length).split("&&")[0].trim().split(/\s+/)) mkdirSync(inStage(stage, path), { recursive: true });
    } else {
      process.stderr.write(`build-rootfs: [${stage.name}] RUN ${args}\n`);
      const result = spawnSync("sh", ["-c", args], { cwd: join(stage.root, stage.workdir), env: { ...process.env, ...stage.env }, stdio: ["ignore", 2, 2] }); // stdout carries only the result
      if (result.status !== 0) fail(`[${stage.name}] RUN ${args} failed (exit ${result.status})`);
    }
  } else if (op === "USER") {
    stage.user = args;
  } else if (op === "ENTRYPOINT" || op === "CMD") {
    stage[op.toLowerCase()] = JSON.parse(args);
  } else if (op === "HEALTHCHECK") {
    stage.healthcheck = JSON.parse(args.slice(args.indexOf("CMD ") + 4));
  } else if (!["EXPOSE", "STOPSIGNAL", "LABEL", "ARG"].includes(op)) {
    fail(`unsupported instruction ${op}`);
  }
}

const final = stages.get("final");
if (!final) fail("the Dockerfile has no final (unnamed) stage");
process.stdout.write(
  `${JSON.stringify({ root: final.root, workdir: join(final.root, final.workdir), env: final.env, user: final.user, entrypoint: final.entrypoint, healthcheck: final.healthcheck })}\n`,
);
