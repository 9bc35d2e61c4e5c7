import type { FastifyRequest } from "fastify";

/** What browsers say in Sec-Fetch-Site when the page that started the request is of another origin. */
const anotherOrigin = new Set(["cross-site", "same-site"]);

/**
 * Whether a browser sent the request for a page of another origin (Fetch Metadata: Sec-Fetch-Site
 * `cross-site` or `same-site`). A browser sends the Basic credentials it cached at its own prompt
 * with a navigation or form any site starts, so such a request may carry a signed-in person's
 * identity without them meaning it. Clients other than browsers send no Sec-Fetch-Site.
 */
export function sentForAnotherSite(request: FastifyRequest): boolean {
  const site = request.headers["sec-fetch-site"];
  return site !== undefined && anotherOrigin.has(site);
}
