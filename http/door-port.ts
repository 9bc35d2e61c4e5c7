import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import type { ExportServing } from "../api/types";
import { announceOpening, type StoredAudit } from "../exports/door";
import { connectionsRefused } from "./door-app";

/** What an HTTP export door tells of its port: who it is (for audit) and its record counts. */
export interface DoorPortOptions {
  exportId: string;
  /** The export type, as audit category and in messages. */
  component: string;
  host: string;
  port: number;
  tls: boolean;
  audit: (level: "info", event: string, message: string, details: Record<string, unknown>) => void;
  /** For `port.opened`: the door serves only once it is stored. */
  storedAudit: StoredAudit;
  rows: () => ExportServing["rows"];
}

/**
 * The listening port of an HTTP export door (pipeline, FHIR): its connections counted as they
 * open (TLS: once the handshake is done), `port.opened` (stored, else the port is closed again) and `port.closed` audited, every
 * connection cut when the door closes (a stopped export serves nothing more, not even a
 * keep-alive client).
 */
export class HttpDoorPort {
  private readonly since = new Date().toISOString();
  private readonly sockets = new Set<Socket>();
  private total = 0;

  private constructor(
    private readonly app: FastifyInstance,
    private readonly options: DoorPortOptions,
  ) {
    app.server.on(options.tls ? "secureConnection" : "connection", (socket: Socket) => {
      this.total++;
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
  }

  static async listen(app: FastifyInstance, options: DoorPortOptions): Promise<HttpDoorPort> {
    const door = new HttpDoorPort(app, options);
    const { exportId, component, host, port, tls } = options;
    await app.listen({ host, port });
    await announceOpening(options.storedAudit, `${component} export ${exportId} listening on ${host}:${port}`, { exportId, component, host, port, tls }, () =>
      door.close(),
    );
    return door;
  }

  serving(): ExportServing {
    const { host, port } = this.options;
    return {
      host,
      port,
      since: this.since,
      connections: { open: this.sockets.size, total: this.total, refused: connectionsRefused(this.app) },
      rows: this.options.rows(),
    };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await this.app.close();
    const { exportId, component, host, port } = this.options;
    this.options.audit("info", "port.closed", `${component} export ${exportId} stopped listening on ${host}:${port}`, { exportId, component, host, port });
  }
}
