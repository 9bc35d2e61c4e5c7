import { jetstreamManager } from "@nats-io/jetstream";
import type { HttpListenerLimits } from "../../http/listener-limits";
import type { HostCheckSettings } from "../../http/host-check";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ExportRecord } from "../../actors/export/export-actor";
import { RevisionedKv } from "../../actors/runtime/revisioned-kv";
import type { ExportView } from "../../api/types";
import type { DoorServices, ExportDoorType, OpenDoor } from "../../exports/door";
import { type RefusalReasons, takenFields } from "../../exports/body-checks";
import { PipelineExport } from "./pipeline-export";
import type { PipelineProgress } from "./pipeline-stream";
import { PipelineStreams, PipelineSubjects, provisionPipelines } from "./subjects";

/**
 * The fields of PUT /export a pipeline export takes: records come in and go out through the
 * export itself, so there is nothing to connect to and nobody to log in as.
 */
const taken = takenFields("resourceServerId", "cloudSigning");
const noStatements = "a pipeline export runs no statements";
const noStore = "a pipeline export has no backing store to connect to";
const refusedBecause: RefusalReasons = {
  endpoint: "a pipeline export has no backing store",
  credentials: "a pipeline export has no back end to log in to",
  allowWrites: noStatements,
  strict: noStatements,
  pushdown: noStatements,
  backendTls: noStore,
  backendCa: noStore,
  buckets: noStore,
  formats: noStore,
};

/**
 * Pipeline exports (spec 4.4 rule 5): records in and answers out over HTTP, NATS request/reply
 * and a JetStream stream. The streams and progress bucket are created with the first pipeline
 * export, so a cluster without pipelines carries none.
 */
export class PipelineDoor implements ExportDoorType {
  readonly type = "pipeline" as const;
  readonly takes = taken;
  readonly refusedBecause = refusedBecause;
  private progressStore?: Promise<RevisionedKv<PipelineProgress>>;

  constructor(private readonly settings: { nc: NatsConnection; jsReplicas: number; httpLimits?: HttpListenerLimits; hostCheck?: HostCheckSettings }) {}

  /** Every field it takes is checked by the service (type, mapping group, purpose, cloud-signing properties). */
  validate(): void {}

  /** Producers may publish to the input subject as soon as the export exists. */
  async prepare(): Promise<void> {
    await this.progress();
  }

  async open(services: DoorServices): Promise<OpenDoor> {
    const auth = { authenticator: services.authenticator, audit: (entry: Parameters<typeof services.events.audit>[0]) => services.events.audit(entry) };
    const { tls } = services;
    return PipelineExport.start({
      nc: services.nc,
      record: services.record,
      decider: services.decider,
      auth,
      audit: services.audit,
      storedAudit: services.storedAudit,
      log: services.log,
      listenHost: services.listenHost,
      tls: tls && { cert: tls.cert, key: tls.key },
      overrides: services.overrides,
      listenerLimits: this.settings.httpLimits,
      hostCheck: this.settings.hostCheck,
      progress: await this.progress(),
    });
  }

  /** A removed export's input and answers are purged, its progress forgotten. */
  async discard(exportId: string): Promise<void> {
    const progress = await this.progress();
    const jsm = await jetstreamManager(this.settings.nc);
    await jsm.streams.purge(PipelineStreams.input.name, { filter: PipelineSubjects.input(exportId) });
    await jsm.streams.purge(PipelineStreams.output.name, { filter: PipelineSubjects.output(exportId) });
    await progress.kv.purge(exportId);
  }

  view(record: ExportRecord): Partial<ExportView> {
    return { subjects: { request: PipelineSubjects.request(record.id), input: PipelineSubjects.input(record.id), output: PipelineSubjects.output(record.id) } };
  }

  /** The pipeline streams and progress bucket, created (idempotently) the first time an export needs them. */
  private progress(): Promise<RevisionedKv<PipelineProgress>> {
    if (!this.progressStore) {
      this.progressStore = provisionPipelines(this.settings.nc, this.settings.jsReplicas).then((kv) => new RevisionedKv<PipelineProgress>(kv));
      // A failed creation is tried again by the next export that needs it.
      this.progressStore.catch(() => (this.progressStore = undefined));
    }
    return this.progressStore;
  }
}
