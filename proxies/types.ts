/** What the node serving an export reports about it (GET /export), whatever its type. */
export interface ExportServing {
  host: string;
  port: number;
  since: string;
  connections: { open: number; total: number; refused: number };
  /** Rows (PostgreSQL) or records (pipeline) seen, kept whole or with fields emptied, dropped; and values emptied. */
  rows: { in: number; kept: number; dropped: number; valuesNulled: number };
  /** SQL exports: statement texts analysed, and those parsed (the rest came from the analysis cache). */
  statements?: { analysed: number; parsed: number };
  /** Pipeline exports: the streaming mode's progress through the input subject. */
  stream?: { processed: number; lastInputSeq: number };
}

/** Where an export's audit records go (category: the export's component). */
export type ExportAudit = (level: "debug" | "info" | "warn" | "error", event: string, message: string, details: Record<string, unknown>) => void;
