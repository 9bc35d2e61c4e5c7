import assert from "node:assert/strict";
import { call } from "./http";
import type { NodeProcess } from "./node-process";
import { until } from "./wait";

/**
 * SIGKILLs the node serving export `id` and waits until the export `answers` again; checks that
 * a surviving node reports serving it. Returns the nodes left and how long the export was gone.
 */
export async function failOverServingNode(
  nodes: readonly NodeProcess[],
  id: string,
  answers: () => Promise<boolean>,
): Promise<{ survivors: NodeProcess[]; gapMs: number }> {
  await until("the export answers", answers);
  let servedBy = "";
  await until("a node reports serving it", async () => {
    servedBy = (await call(nodes[0]!, "GET", `/export?id=${id}`)).body.serving?.nodeId ?? "";
    return servedBy !== "";
  });
  const victim = nodes.find((n) => n.options.nodeId === servedBy)!;
  const survivors = nodes.filter((n) => n !== victim);
  const killedAt = Date.now();
  await victim.kill();
  await until("the export answers again", answers, 30_000);
  const gapMs = Date.now() - killedAt;
  assert.equal((await call(survivors[0]!, "GET", `/export?id=${id}`)).body.serving.nodeId, survivors[0]!.options.nodeId);
  return { survivors, gapMs };
}
