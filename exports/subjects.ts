/** Asks the node serving an export what it serves (core NATS request; only that node answers). */
export const ExportSubjects = {
  serving: (exportId: string) => `warden.rt.export.serving.${exportId}`,
  servingAll: "warden.rt.export.serving.*",
} as const;
