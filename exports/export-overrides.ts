import type { OverridesByVerifier } from "../auth/types";
import type { ExportRecord } from "../actors/export/export-actor";

/** The verifier properties an export sets over the profiles' (spec 5.5), by verifier type; undefined when it sets none. */
export function exportOverrides(record: ExportRecord): OverridesByVerifier | undefined {
  const overrides: OverridesByVerifier = {};
  if (record.resourceServerId) overrides.oauth = { resourceServerId: record.resourceServerId };
  const cloud = Object.entries(record.cloudSigning ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === "string");
  if (cloud.length > 0) overrides.cloud = Object.fromEntries(cloud);
  return overrides.oauth || overrides.cloud ? overrides : undefined;
}
