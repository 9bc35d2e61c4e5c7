import { flowOf } from "../decision/engine";
import type { DoorServices } from "./door";

/**
 * How a wire door traces a connection when it ends (kind `export.connection`): who it was, what
 * it counted. A closing connection's summary answers nobody: a failure to store it is logged and
 * counted by the event log, not waited for.
 */
export function connectionTracer(
  services: Pick<DoorServices, "record" | "events" | "nodeId">,
): (connectionId: string, counts: object, identity: { user?: string; database?: string }) => void {
  const { record, events, nodeId } = services;
  return (connectionId, counts, identity) =>
    void events.trace("export", flowOf(record.metadata.type), {
      kind: "export.connection",
      time: new Date().toISOString(),
      nodeId,
      exportId: record.id,
      connectionId,
      identity: identity.user ?? null,
      database: identity.database ?? null,
      purposeId: record.metadata.purposeId,
      type: record.metadata.type,
      mappingGroup: record.resolverGroup,
      ...counts,
    });
}
