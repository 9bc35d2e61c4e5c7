/**
 * A user's location as a region code (spec 2.4): ISO 3166-1 alpha-2, optionally with an ISO 3166-2
 * subdivision (`DE`, `US-CA`). Anything else (`DEU`, `Deutschland`) would match no listed region and
 * escape every location override, so it counts as no location: every location override applies. Overrides
 * list the same codes (policy/validate.ts): one on a code no user can have would never apply.
 */
export const regionCode = /^[A-Za-z]{2}(-[A-Za-z0-9]{1,3})?$/;
