import type { FastifyRequest } from "fastify";
import { isUiRoute } from "../http/authentication";
import { HttpError } from "../http/errors";
import { sentForAnotherSite } from "../http/other-site";
import { componentOfRequest } from "./route-components";

/**
 * Refuses a request to a component's API that a browser sent for a page of another origin
 * (Fetch Metadata: Sec-Fetch-Site `cross-site` or `same-site`), before its credentials are
 * looked at. Why: a browser sends the Basic credentials it cached at its own prompt with a
 * top-level navigation started by any site (window.open, a link, a form), so such a page could
 * make a signed-in operator's browser read a user's access report, and the audit would say the
 * operator did. The web UIs call the APIs from their own origin (`same-origin`); clients other
 * than browsers send no Sec-Fetch-Site; the pages themselves may still be linked from anywhere.
 */
export function otherSiteRefusal(request: FastifyRequest): HttpError | undefined {
  if (!sentForAnotherSite(request) || isUiRoute(request) || componentOfRequest(request) === undefined) return undefined;
  return new HttpError("ERR_REQUEST_CROSS_SITE");
}
