import type { ActorDefinition, AnyHandler, ExclusiveContext, ExclusiveHandler, SharedContext, SharedHandler } from "./types";

const typeNamePattern = /^[A-Za-z0-9_-]{1,64}$/;

/** Defines an actor type. The returned definition is also what clients use to get a typed reference. */
export function actor<S, H extends Record<string, AnyHandler<S>>>(definition: ActorDefinition<S, H>): ActorDefinition<S, H> {
  if (!typeNamePattern.test(definition.type)) {
    throw new Error(`actor type name '${definition.type}' must be 1-64 letters, digits, '-' or '_'`);
  }
  return Object.freeze({ ...definition, handlers: Object.freeze({ ...definition.handlers }) });
}

/** A read-only handler: runs at once against the last committed state. */
export function shared<S, A = undefined, R = void>(run: (ctx: SharedContext<S>, arg: A) => R | Promise<R>): SharedHandler<S, A, R> {
  return { kind: "shared", run };
}

/** A state-changing handler: one at a time per actor, in arrival order, persisted before the reply. */
export function exclusive<S, A = undefined, R = void>(run: (ctx: ExclusiveContext<S>, arg: A) => R | Promise<R>): ExclusiveHandler<S, A, R> {
  return { kind: "exclusive", run };
}
