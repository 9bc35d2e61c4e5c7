import type { AnyActorDefinition } from "./runtime/types";

/** The product's actor types, hosted by every node. Each lands here with its issue (policy, user, redaction job, export). */
export const builtInActors: readonly AnyActorDefinition[] = [];
