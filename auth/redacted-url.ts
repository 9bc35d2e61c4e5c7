/**
 * A URL as it may be logged or audited: user name and password (`scheme://user:secret@host`)
 * replaced by `***`, so credentials written into NATS_URL, a backing endpoint or a verifier's
 * address never reach a log line or the audit stream. Text that does not parse as a URL is
 * still cut at a `user:secret@` it carries.
 */
export function withoutUserInfo(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = "***";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i, "$1***@");
  }
}
