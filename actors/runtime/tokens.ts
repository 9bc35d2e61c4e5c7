import type { InjectionToken } from "tsyringe";
import type { NatsConnection } from "@nats-io/transport-node";
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { RuntimeOptions } from "./types";

export interface RuntimeBuckets {
  nodes: KV;
  partitions: KV;
  state: KV;
}

/** Injection tokens for what the runtime receives rather than builds. */
export const Tokens = {
  Nats: Symbol("NatsConnection") as InjectionToken<NatsConnection>,
  Logger: Symbol("Logger") as InjectionToken<Logger>,
  Options: Symbol("RuntimeOptions") as InjectionToken<RuntimeOptions>,
  Buckets: Symbol("RuntimeBuckets") as InjectionToken<RuntimeBuckets>,
  Metrics: Symbol("MetricsRegistry") as InjectionToken<Registry>,
} as const;
