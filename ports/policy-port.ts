import { policy } from "../actors/policy/policy-actor";
import { policyRevision } from "../actors/policy/revision-actor";
import type { ActorRuntime } from "../actors/runtime/runtime";
import type { ConfigWriteResult, PolicyPort } from "../api/types";

const policyId = "default";

/** The gateway's view of the policy: calls to the policy actors, and an audit record for every change. */
export function policyPort(runtime: ActorRuntime): PolicyPort {
  const actor = runtime.client.ref(policy, policyId);
  const revisionRecord = (revision: number) => runtime.client.ref(policyRevision, `${policyId}.${revision}`).get();
  /** A configuration write is audited first (`config.requested`), then `config.changed` with its revision (EventLog.auditedChange). */
  const audited = (apply: () => Promise<ConfigWriteResult>, by: string, change: string): Promise<ConfigWriteResult> =>
    runtime.events.auditedChange(
      { category: "config", level: "info", event: "config.requested", message: `${by} asks: ${change}`, details: { by, change } },
      apply,
      (result) =>
        result.changed
          ? {
              category: "config",
              level: "info",
              event: "config.changed",
              message: `configuration revision ${result.revision}: ${change}`,
              details: { revision: result.revision, by, change },
            }
          : undefined,
    );
  return {
    read: async () => {
      const { revision, config } = await actor.get();
      return { revision, config };
    },
    replace: (config, by, expectedRevision, mappingGroupsFixed) =>
      audited(
        () =>
          actor.replace({ config, by, expectedRevision, ...(mappingGroupsFixed ? { mappingGroupsFixed } : {}) }).catch(async (error: unknown) => {
            // A caller without mapping:write changing mapping groups: a denial, audited as the authorization hook audits its own.
            if ((error as { code?: string }).code === "MAPPING_WRITE_FORBIDDEN")
              await runtime.events.audit({
                category: "config",
                level: "warn",
                event: "connection.forbidden",
                message: `PUT /config refused: '${by}' does not hold mapping:write and the configuration changes mapping groups`,
                details: { component: "mapping", action: "write", subject: by, rule: null },
              });
            throw error;
          }),
        by,
        "replaced the whole configuration",
      ),
    write: (write, by, expectedRevision) => audited(() => actor.write({ write, by, expectedRevision }), by, `wrote ${write.section}`),
    remove: (kind, id, by, expectedRevision) => audited(() => actor.remove({ kind, id, by, expectedRevision }), by, `removed ${kind} '${id}'`),
    history: async (from, count) => {
      const records = await Promise.all(Array.from({ length: count }, (_, i) => revisionRecord(from + i)));
      return records.flatMap((record) => (record ? [{ revision: record.revision, at: record.at, by: record.by, change: record.change }] : []));
    },
    revision: revisionRecord,
  };
}
