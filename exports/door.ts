
/** Where an export's audit records go (category: the export's component). */
export type ExportAudit = (level: "debug" | "info" | "warn" | "error", event: string, message: string, details: Record<string, unknown>) => void;
