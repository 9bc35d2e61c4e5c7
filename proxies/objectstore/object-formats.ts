import type { DocumentFormat } from "../../redaction/types";

/** Content types and key suffixes read as documents unless the export's `formats` says otherwise. */
export const defaultFormats: Readonly<Record<string, DocumentFormat>> = {
  "text/csv": "csv",
  "application/json": "json",
  "application/x-ndjson": "ndjson",
  "application/ndjson": "ndjson",
  "application/jsonl": "ndjson",
  ".csv": "csv",
  ".json": "json",
  ".ndjson": "ndjson",
  ".jsonl": "ndjson",
};

/** A `formats` entry names a key suffix (`.csv`) or a content type (`text/csv`). */
export function formatKeyProblem(name: string): string | undefined {
  if (/^\.[A-Za-z0-9._-]{1,32}$/.test(name)) return undefined;
  if (/^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/.test(name)) return undefined;
  return "must be a key suffix such as .csv or a lower-case content type such as text/csv";
}

/**
 * The document format of an object: its stored content type first (parameters left out),
 * then the longest key suffix that names one; undefined: not a document this export can
 * redact, so it is refused.
 */
export function formatOf(
  contentType: string | undefined,
  key: string,
  overrides: Readonly<Record<string, DocumentFormat>> | undefined,
): DocumentFormat | undefined {
  const formats = { ...defaultFormats, ...overrides };
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType !== "" && Object.hasOwn(formats, mediaType) && mediaType.includes("/")) return formats[mediaType];
  let best: string | undefined;
  for (const name of Object.keys(formats)) {
    if (name.startsWith(".") && key.toLowerCase().endsWith(name.toLowerCase()) && (best === undefined || name.length > best.length)) best = name;
  }
  return best === undefined ? undefined : formats[best];
}
