/**
 * Bundle links and fullUrls as the client must see them: under the export's own base. A URL
 * under the backing server's base (or relative to it) is moved to the export's base; any other
 * URL is not the export's to hand out and is left out, so a client never follows a link to the
 * backing server.
 */
export function exportUrl(url: unknown, backendBase: string, exportBase: string): string | undefined {
  if (typeof url !== "string") return undefined;
  if (url.startsWith(backendBase)) return exportBase + url.slice(backendBase.length);
  // Relative: a FHIR URL such as `Patient/1` or `Observation?_count=2`, never a scheme or a path from the host's root.
  if (/^[A-Z][A-Za-z]*(?:[/?]|$)/.test(url) || url.startsWith("?")) return exportBase + url;
  return undefined;
}
