import { Gauge, type Registry } from "prom-client";
import type { EventLog } from "../actors/runtime/event-log";
import type { ActorRuntime } from "../actors/runtime/runtime";
import type { Authenticator } from "../auth/authenticator";
import type { ExportServing } from "../api/types";
import type { ExportSupervisor } from "../exports/export-supervisor";
import type { PostgresDoor } from "../proxies/postgres/door";
import { collectedCounter, collectedGauge } from "../metrics/collected";
import { decisionCounts } from "../metrics/decision-counts";
import type { DocumentService } from "../redaction/jobs/document-service";
import { version } from "../gateway/version";

/** The NATS connection's state, kept by the node's status loop. */
export interface NatsTally {
  connected: boolean;
  disconnects: number;
  reconnects: number;
}

export interface NodeMetricSources {
  runtime: ActorRuntime;
  nats: NatsTally;
  exports: ExportSupervisor;
  /** The PostgreSQL export type: its proxy worker processes. */
  postgres: PostgresDoor;
  documents: DocumentService;
  authenticator: Authenticator;
}

/**
 * The node's metrics beyond those its parts register themselves (HTTP durations, actor calls):
 * each is read at scrape time from the tally the counting code keeps, so nothing here runs per
 * request. Listed, with what each means, in docs/metrics.md.
 */
export function registerNodeMetrics(registry: Registry, sources: NodeMetricSources): void {
  const { runtime, nats, exports, postgres, documents, authenticator } = sources;
  new Gauge({ name: "warden_build_info", help: "The running version (always 1)", labelNames: ["version"], registers: [registry] }).set({ version }, 1);

  collectedCounter(
    registry,
    "warden_decisions_total",
    "Decisions made on this node, by door, flow, outcome and first reason code",
    ["door", "flow", "allowed", "reason"] as const,
    (set) => {
      for (const [[door, flow, allowed, reason], count] of decisionCounts.leaves(4))
        set({ door: door!, flow: flow!, allowed: allowed!, reason: reason! }, count);
    },
  );

  // One series per export this node serves, read from what its listener counted since its port opened here.
  // biome-ignore lint/suspicious/noShadowRestrictedNames: `export` is the metric's label name
  const perExport = (valueOf: (serving: ExportServing) => number) => (set: (labels: { export: string; type: string }, value: number) => void) => {
    for (const { exportId, type, serving } of exports.servingCounts()) set({ export: exportId, type }, valueOf(serving));
  };
  const exportLabels = ["export", "type"] as const;
  collectedCounter(
    registry,
    "warden_export_connections_total",
    "Client connections an export accepted on this node since its port opened here",
    exportLabels,
    perExport((s) => s.connections.total),
  );
  collectedGauge(
    registry,
    "warden_export_connections_open",
    "Client connections open on an export served by this node",
    exportLabels,
    perExport((s) => s.connections.open),
  );
  collectedCounter(
    registry,
    "warden_export_connections_refused_total",
    "Client connections an export refused on this node",
    exportLabels,
    perExport((s) => s.connections.refused),
  );
  collectedCounter(
    registry,
    "warden_export_fields_emptied_total",
    "Field values an export emptied in the rows (records) it kept",
    exportLabels,
    perExport((s) => s.rows.valuesNulled),
  );
  collectedCounter(
    registry,
    "warden_export_rows_total",
    "Rows (PostgreSQL) or records (pipeline) an export passed, by outcome: kept (whole or with fields emptied) or dropped",
    ["export", "type", "outcome"] as const,
    (set) => {
      for (const { exportId, type, serving } of exports.servingCounts()) {
        set({ export: exportId, type, outcome: "kept" }, serving.rows.kept);
        set({ export: exportId, type, outcome: "dropped" }, serving.rows.dropped);
      }
    },
  );

  collectedGauge(
    registry,
    "warden_redaction_jobs",
    "Redaction jobs whose actors this node hosts, by state (summed over nodes: the cluster's)",
    ["state"] as const,
    (set) => {
      for (const [state, count] of Object.entries(documents.jobsByStatus())) set({ state }, count);
    },
  );
  collectedCounter(
    registry,
    "warden_redaction_bytes_total",
    "Document bytes uploaded to (in) and redacted documents downloaded from (out) this node",
    ["direction"] as const,
    (set) => {
      set({ direction: "in" }, documents.bytes.in);
      set({ direction: "out" }, documents.bytes.out);
    },
  );

  collectedCounter(
    registry,
    "warden_authentication_total",
    "Credential checks, by component, verifier (none: no verifier takes the credential type) and outcome (verified, rejected, unavailable, unsupported)",
    ["component", "verifier", "outcome"] as const,
    (set) => {
      for (const [[component, verifier, outcome], count] of authenticator.outcomes.leaves(3))
        set({ component: component!, verifier: verifier!, outcome: outcome! }, count);
    },
  );

  collectedGauge(registry, "warden_nats_connected", "1 while the node's NATS connection is up, 0 while it is reconnecting", [] as const, (set) =>
    set({}, nats.connected ? 1 : 0),
  );
  collectedCounter(registry, "warden_nats_disconnects_total", "Times the node's NATS connection was lost", [] as const, (set) => set({}, nats.disconnects));
  collectedCounter(registry, "warden_nats_reconnects_total", "Times the node's NATS connection came back", [] as const, (set) => set({}, nats.reconnects));

  collectedCounter(
    registry,
    "warden_lease_renewals_total",
    "Lease renewals of this node, by outcome: ok, failed (retried at the next heartbeat), lapsed (the lease ran out: the node re-registered)",
    ["outcome"] as const,
    (set) => {
      for (const [outcome, count] of Object.entries(runtime.membership.renewals)) set({ outcome }, count);
    },
  );
  collectedGauge(registry, "warden_partitions_owned", "Actor partitions this node owns", [] as const, (set) => set({}, runtime.placement.ownedCount()));
  collectedGauge(registry, "warden_partitions", "Actor partitions of the cluster", [] as const, (set) => set({}, runtime.placement.partitionCount));

  collectedGauge(
    registry,
    "warden_proxy_workers",
    "PostgreSQL export worker processes running (EXPORT_WORKERS; 0 until the first PostgreSQL export is served)",
    [] as const,
    (set) => set({}, postgres.runningWorkers()),
  );
  collectedCounter(registry, "warden_proxy_worker_restarts_total", "PostgreSQL export worker processes started again after exiting", [] as const, (set) =>
    set({}, postgres.workerRestarts),
  );

  registerTraceMetrics(registry, runtime.events);
}

/** Trace batches waiting to be published (the event log counts the records stored and failed itself, on the same registry). */
export function registerTraceMetrics(registry: Registry, events: EventLog): void {
  collectedGauge(registry, "warden_trace_batches_pending", "Trace batches waiting for the end of the event loop's turn to be published", [] as const, (set) =>
    set({}, events.pendingBatches),
  );
}
