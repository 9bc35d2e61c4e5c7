import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { realisticPolicy } from "../testkit/policy";

/** The benchmark document's columns: 8, three of them quoted with commas (and doubled quotes). */
export const benchColumns = ["user_id", "email", "name", "address", "phone", "clicks", "note", "created_at"];

/** The mapping group the benchmarks redact with. */
export const benchGroup = {
  name: "bench",
  fieldMappings: [
    { recordField: "user_id", resourceContext: true },
    { recordField: "email", categoryId: "contact" },
    { recordField: "name", categoryId: "identity" },
    { recordField: "address", categoryId: "location" },
    { recordField: "phone", categoryId: "contact" },
    { recordField: "clicks", categoryId: "usage" },
    { recordField: "created_at", categoryId: "usage" },
  ],
};

export const benchUserId = (index: number) => `u${String(index).padStart(5, "0")}`;
/** Half of the users may be used; the other half's rows are dropped. */
export const benchUserAllowed = (index: number) => index % 2 === 0;

/** Writes a CSV of about `megabytes` MB for `users` users; returns its row counts. */
export async function writeBenchCsv(path: string, megabytes: number, users: number): Promise<{ rows: number; kept: number }> {
  const out = createWriteStream(path, { highWaterMark: 1 << 20 });
  out.write(`${benchColumns.join(",")}\n`);
  let written = 0;
  let rows = 0;
  let kept = 0;
  const target = megabytes * 1024 * 1024;
  while (written < target) {
    const lines: string[] = [];
    for (let i = 0; i < 5000; i++, rows++) {
      const user = rows % users;
      if (benchUserAllowed(user)) kept++;
      lines.push(
        `${benchUserId(user)},user${user}@example.com,"Surname, Given ""G"" ${user}","${rows % 997} Main Street, Springfield, ${rows % 50}",+1-555-${String(rows % 10000).padStart(4, "0")},${rows % 1000},"note, with comma ${rows}",2026-11-${String((rows % 28) + 1).padStart(2, "0")}T10:00:00Z`,
      );
    }
    const chunk = `${lines.join("\n")}\n`;
    written += chunk.length;
    if (!out.write(chunk)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  return { rows, kept };
}

/** Loads the realistic policy with the bench mapping group into a node, and its `users` users (half of them accepted the terms). */
export async function setUpBenchPolicy(nodeUrl: string, users: number): Promise<void> {
  const put = (path: string, body?: unknown) =>
    fetch(`${nodeUrl}${path}`, {
      method: "PUT",
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
  const policy = realisticPolicy();
  await put("/config", { ...policy, mappingGroups: [...policy.mappingGroups, benchGroup] });
  for (let start = 0; start < users; start += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, users - start) }, async (_, i) => {
        const user = start + i;
        await put("/user", { userId: benchUserId(user), attributes: { dob: "1990-01-01", location: "US" } });
        if (benchUserAllowed(user)) await put(`/user/terms?userId=${benchUserId(user)}`);
      }),
    );
  }
}
