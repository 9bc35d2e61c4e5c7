import type { AccessReport } from "../api/subject-rights";

const columns = [
  "section",
  "time",
  "door",
  "exportId",
  "type",
  "purposeId",
  "thirdPartyId",
  "termsId",
  "flow",
  "allowed",
  "denied",
  "categoryIds",
  "traceId",
] as const;

/** One CSV cell: quoted when needed, and a leading = + - @ made inert so a spreadsheet never runs an id as a formula. */
function cell(value: string | number | boolean | undefined | null): string {
  if (value === undefined || value === null) return "";
  let text = String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * The report's decisions as CSV for a download: one `count` row per door and purpose of the
 * period, one `day` row per day and purpose, then one `event` row per latest event of the page.
 */
export function reportCsv(report: AccessReport): string {
  const rows: Array<Array<string | number | boolean | undefined | null>> = [[...columns]];
  for (const g of report.decisions.byPurposeAndDoor)
    rows.push(["count", report.period.from, g.door, g.exportId, g.type, g.purposeId, g.thirdPartyId, g.termsId, g.flow, g.allowed, g.denied, "", ""]);
  for (const d of report.decisions.byDay) rows.push(["day", d.day, "", "", "", d.purposeId, "", "", "", d.allowed, d.denied, "", ""]);
  for (const e of report.decisions.latest.events)
    rows.push([
      "event",
      e.time,
      e.door,
      e.type,
      e.purposeId,
      e.thirdPartyId,
      e.termsId,
      e.flow,
      e.allowed ? 1 : 0,
      e.allowed ? 0 : 1,
      e.categoryIds.join(" "),
      e.traceId,
    ]);
  return `${rows.map((row) => row.map(cell).join(",")).join("\r\n")}\r\n`;
}
