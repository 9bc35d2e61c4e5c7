import { policy } from "../actors/policy/policy-actor";
import { policyRevision } from "../actors/policy/revision-actor";
import type { ActorRuntime } from "../actors/runtime/runtime";
import type { ConfigWriteResult, PolicyPort } from "../api/types";

const policyId = "default";

/** The gateway's view of the policy: calls to the policy actors, and an audit record for every change. */
export function policyPort(runtime: ActorRuntime): PolicyPort {
  const actor = runtime.client.ref(policy, policyId);
  const revisionRecord = (revision: number) => runtime.client.ref(policyRevision, `${policyId}.${revision}`).get();
  const audited = async (result: ConfigWriteResult, by: string, change: string): Promise<ConfigWriteResult> => {
    if (result.changed) {
      await runtime.events.audit({
        category: "config",
        level: "info",
        event: "config.changed",
        message: `configuration revision ${result.revision}: ${change}`,
        details: { revision: result.revision, by, change },
      });
    }
    return result;
  };
  return {
    read: async () => {
      const { revision, config } = await actor.get();
      return { revision, config };
    },
    replace: async (config, by, expectedRevision) => audited(await actor.replace({ config, by, expectedRevision }), by, "replaced the whole configuration"),
    write: async (write, by, expectedRevision) => audited(await actor.write({ write, by, expectedRevision }), by, `wrote ${write.section}`),
    remove: async (kind, id, by, expectedRevision) => audited(await actor.remove({ kind, id, by, expectedRevision }), by, `removed ${kind} '${id}'`),
    history: async (from, count) => {
      const records = await Promise.all(Array.from({ length: count }, (_, i) => revisionRecord(from + i)));
      return records.flatMap((record) => (record ? [{ revision: record.revision, at: record.at, by: record.by, change: record.change }] : []));
    },
    revision: revisionRecord,
  };
}
