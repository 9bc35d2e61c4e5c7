import { anyObject, count, listOf, openObject, text, texts } from "./answer";

/** Answers of the subject-rights routes under /user (api/subject-rights.ts). */

const purposeRef = { purposeId: text, termsId: text };

export const accessReportAnswer = openObject(
  "the access report: the user's state, what may use each user-access category now, and the decisions of the period",
  {
    userId: text,
    generatedAt: text,
    period: openObject("the period covered", { from: text, to: text }, ["from", "to"]),
    guardianId: text,
    categories: listOf(openObject("a user-access category shown", { categoryId: text, name: text }, ["categoryId", "name"])),
    state: anyObject("terms, contract, opt-ins, consents with their history, guardians, children, disabled flows and the overrides that apply now"),
    uses: listOf(openObject("a category and what may use it now", { categoryId: text, uses: listOf(anyObject("a purpose, third party and flow")) })),
    decisions: openObject(
      "the decisions of the period, from the per-user decision index",
      {
        indexedThrough: count,
        total: count,
        allowed: count,
        denied: count,
        byPurposeAndDoor: listOf(anyObject("counts of one door, export, purpose and flow")),
        byDay: listOf(anyObject("counts of one day and purpose")),
        latest: openObject("a page of the latest events", {
          offset: count,
          limit: count,
          total: count,
          kept: count,
          events: listOf(anyObject("a traced decision")),
        }),
      },
      ["total", "allowed", "denied"],
    ),
  },
  ["userId", "period", "decisions"],
);

export const restrictionAnswer = openObject(
  "what the restriction turned off, and what a guardian's restriction left on",
  {
    userId: text,
    by: text,
    restricted: listOf(openObject("a purpose turned off", purposeRef, ["purposeId"])),
    disabledFlows: listOf(anyObject("purposeId and thirdPartyId")),
    leftOn: listOf(openObject("left on: outside the guardian categories", { ...purposeRef, outside: texts }, ["purposeId"])),
  },
  ["userId", "restricted"],
);
