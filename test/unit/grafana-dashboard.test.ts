import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(__dirname, "..", "..", "..");

interface Dashboard {
  uid: string;
  panels: Array<{ id: number; title: string; targets: Array<{ expr: string; refId: string }> }>;
}

test("the Grafana dashboard charts every metric of docs/metrics.md, and only those", () => {
  const dashboard = JSON.parse(readFileSync(join(root, "deploy", "grafana-dashboard.json"), "utf8")) as Dashboard;
  assert.ok(dashboard.uid);
  const ids = dashboard.panels.map((panel) => panel.id);
  assert.equal(new Set(ids).size, ids.length, "panel ids are unique");
  const documented = new Set([...readFileSync(join(root, "docs", "metrics.md"), "utf8").matchAll(/^\| `(warden_\w+)` \|/gm)].map((m) => m[1]!));
  const charted = new Set<string>();
  for (const panel of dashboard.panels) {
    assert.ok(panel.targets.length > 0, `${panel.title} has a query`);
    for (const target of panel.targets) {
      for (const [name] of target.expr.matchAll(/warden_\w+/g)) {
        const metric = name.replace(/_(bucket|sum|count)$/, "");
        assert.ok(documented.has(metric), `${panel.title}: ${metric} is not in docs/metrics.md`);
        charted.add(metric);
      }
    }
  }
  assert.deepEqual(
    [...documented].filter((metric) => !charted.has(metric)),
    [],
    "every documented metric has a panel",
  );
});
