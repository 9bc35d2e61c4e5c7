import type { Server } from "node:net";
import type { ExportServing } from "../api/types";
import type { RowCounts } from "./row-counts";

/** Opens a wire door's port exclusively; rejects with the listen error (EADDRINUSE, EACCES...). Later errors are the door's to handle. */
export async function listenExclusive(server: Server, host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", () => undefined);
}

/** What a SQL door reports to GET /export: its port, connections, and the rows and statements its connections counted. */
export function sqlServing(listen: { host: string; port: number; since: string }, connections: ExportServing["connections"], rows: RowCounts): ExportServing {
  return {
    ...listen,
    connections,
    rows: { in: rows.rowsIn, kept: rows.rowsKept, dropped: rows.rowsDropped, valuesNulled: rows.valuesNulled },
    statements: { analysed: rows.statements, parsed: rows.statementsParsed },
  };
}
