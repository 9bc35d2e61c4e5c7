import { policy } from "./policy/policy-actor";
import { policyRevision } from "./policy/revision-actor";
import type { AnyActorDefinition } from "./runtime/types";
import { user } from "./user/user-actor";
import { redactionJob } from "./redaction/job-actor";
import { exportActor, exportPort } from "./export/export-actor";

/** The product's actor types, hosted by every node. Each lands here with its issue. */
export const builtInActors: readonly AnyActorDefinition[] = [policy, policyRevision, user, redactionJob, exportActor, exportPort];
