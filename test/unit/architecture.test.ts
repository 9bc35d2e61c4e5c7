import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";

// The import rules between folders (docs/architecture.md), checked on the sources: a rule
// written only in a document is broken by the first hurried import.

const root = resolve(__dirname, "..", "..", "..");
const productFolders = [
  "actors",
  "api",
  "auth",
  "decision",
  "metrics",
  "exports",
  "gateway",
  "http",
  "policy",
  "ports",
  "protocols",
  "proxies",
  "redaction",
  "rights",
  "service",
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sources(path);
    return entry.endsWith(".ts") ? [path] : [];
  });
}

/** Folders whose subfolders are folders of their own for these rules: each actor and the runtime, each door, each codec, the redaction jobs beside the engines. */
const splitFolders = new Set(["actors", "proxies", "protocols", "redaction"]);

function folderOf(file: string): string {
  const parts = relative(root, file).split("/");
  return parts.length > 2 && splitFolders.has(parts[0]!) ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/** Folder -> the folders its files import (relative imports only, type imports included: a type cycle is still a cycle). */
function folderGraph(folders: string[]): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of folders.flatMap((folder) => sources(join(root, folder)))) {
    const from = folderOf(file);
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const [, spec] of readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
      const to = folderOf(resolve(dirname(file), spec!));
      if (to !== from && !edges.has(to)) edges.set(to, relative(root, file));
    }
  }
  return graph;
}

const graph = folderGraph(productFolders);
const importsOf = (folder: string): string[] => [...(graph.get(folder)?.keys() ?? [])];

test("no import cycle between folders", () => {
  // Tarjan's strongly connected components: any component of more than one folder is a cycle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    for (const to of importsOf(node)) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (stack.includes(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do component.push((member = stack.pop()!));
      while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  const explained = cycles.map((cycle) =>
    cycle
      .map(
        (folder) =>
          `${folder} -> ${importsOf(folder)
            .filter((to) => cycle.includes(to))
            .map((to) => `${to} (${graph.get(folder)!.get(to)})`)
            .join(", ")}`,
      )
      .join("; "),
  );
  assert.deepEqual(explained, []);
});

test("doors never import the gateway, and the gateway never imports a door", () => {
  const doors = [...graph.keys()].filter((folder) => folder.startsWith("proxies"));
  assert.ok(doors.includes("proxies/postgres") && doors.includes("proxies/pipeline"), `doors found: ${doors.join(", ")}`);
  for (const door of doors) assert.ok(!importsOf(door).includes("gateway"), `${door} imports gateway/ (${graph.get(door)!.get("gateway")})`);
  for (const door of doors) assert.ok(!importsOf("gateway").includes(door), `gateway/ imports ${door} (${graph.get("gateway")!.get(door)})`);
});

test("the decision engine reads only the policy model; codecs and the API contract read no product folder", () => {
  assert.deepEqual(
    importsOf("decision").filter((to) => to !== "policy"),
    [],
  );
  assert.deepEqual(
    importsOf("policy").filter((to) => to !== "actors/runtime"),
    [],
    "the policy model and its checks",
  );
  for (const codec of [...graph.keys()].filter((folder) => folder.startsWith("protocols/"))) assert.deepEqual(importsOf(codec), [], `${codec} imports others`);
  assert.deepEqual(
    importsOf("api").filter((to) => !(to.startsWith("actors/") || ["policy", "decision", "redaction"].includes(to))),
    [],
    "api/ is types over the model",
  );
});

test("benchmarks and tests share helpers through testkit/: a benchmark never imports a test, testkit/ neither", () => {
  const offenders = [...sources(join(root, "bench")), ...sources(join(root, "testkit"))].filter((file) =>
    /from\s+"(\.\.\/)+test\//.test(readFileSync(file, "utf8")),
  );
  assert.deepEqual(
    offenders.map((file) => relative(root, file)),
    [],
  );
  assert.ok(sources(join(root, "testkit")).length > 0);
});
