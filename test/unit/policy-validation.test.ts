import { test } from "node:test";
import assert from "node:assert/strict";
import { checkPolicyConfig } from "../../policy/check";
import { maxTermsFields } from "../../policy/validate";
import { emptyPolicyConfig, type PolicyConfig, type Problem } from "../../policy/model";
import { realisticPolicy } from "../../testkit/policy";

function problemsOf(change: (config: PolicyConfig) => void): Problem[] {
  const config = realisticPolicy();
  change(config);
  const result = checkPolicyConfig(JSON.parse(JSON.stringify(config)));
  return result.ok ? [] : result.problems;
}

test("a complete, realistic configuration and the empty one are valid", () => {
  assert.deepEqual(checkPolicyConfig(realisticPolicy()), { ok: true, config: realisticPolicy() });
  assert.equal(checkPolicyConfig(emptyPolicyConfig()).ok, true);
});

test("stableId characters", () => {
  assert.deepEqual(
    problemsOf((c) => {
      c.categories[0].stableId = "contact details";
      c.platformUse.purposes[0].stableId = "service/1";
    }),
    [
      { path: "/categories/0/stableId", problem: "a stableId may contain only letters, digits, '.', '-' and '_'" },
      { path: "/platformUse/purposes/0/stableId", problem: "a stableId may contain only letters, digits, '.', '-' and '_'" },
    ],
  );
});

test("duplicate stable ids anywhere in the configuration", () => {
  assert.deepEqual(
    problemsOf((c) => {
      c.categories[1].fields.push({ stableId: "contact.email", name: "Email again" });
      c.consentedSharing.purposes[0].terms.push({ stableId: "service", name: "Clash", requestedCategoryIds: [] });
      c.platformSharing.purposes[0].thirdParties.push({ stableId: "adco", name: "AdCo again", serviceProvider: false });
      c.platformSharing.purposes[1].thirdParties.push({ stableId: "usage", name: "Clash", serviceProvider: true });
    }),
    [
      { path: "/categories/1/fields/1/stableId", problem: "duplicate stableId 'contact.email' (also at /categories/0/fields/0)" },
      { path: "/consentedSharing/purposes/0/terms/1/stableId", problem: "duplicate stableId 'service' (also at /platformUse/purposes/0)" },
      { path: "/platformSharing/purposes/0/thirdParties/2/stableId", problem: "third party 'adco' is listed twice in this purpose" },
      { path: "/platformSharing/purposes/1/thirdParties/1/stableId", problem: "stableId 'usage' is already used at /categories/3" },
    ],
  );
});

test("names of built-in object properties cannot be stable ids", () => {
  assert.deepEqual(
    problemsOf((c) => {
      c.categories.push({ stableId: "constructor", name: "Sneaky", fields: [] });
      c.platformSharing.purposes[1].thirdParties.push({ stableId: "__proto__", name: "Sneaky", serviceProvider: true });
    }),
    [
      { path: "/categories/5/stableId", problem: "'constructor' is reserved and cannot be a stableId" },
      { path: "/platformSharing/purposes/1/thirdParties/1/stableId", problem: "'__proto__' is reserved and cannot be a stableId" },
    ],
  );
});

test("the same third party may serve several sharing purposes", () => {
  assert.deepEqual(
    problemsOf((c) => c.platformSharing.purposes[1].thirdParties.push({ stableId: "adco", name: "AdCo Ltd", serviceProvider: false })),
    [],
  );
});

test("unknown referenced ids, of the right kind", () => {
  assert.deepEqual(
    problemsOf((c) => {
      c.platformUse.purposes[2].categoryIds.push("nope");
      c.userAccess.categoryIds.push("usage", "usage");
      c.contractualExchange.purposes[0].terms[0].platformUsePurposeIds.push("payments");
      c.contractualExchange.purposes[0].terms[0].platformSharingPurposeIds.push("ghost");
      c.consentedSharing.purposes[0].terms[0].requestedCategoryIds.push("contact.email");
      c.guardian!.allowedToDisable.push({ purposeId: "payments", thirdPartyIds: ["adco"] }, { purposeId: "service", thirdPartyIds: [] });
    }),
    [
      { path: "/platformUse/purposes/2/categoryIds/1", problem: "unknown category 'nope'" },
      { path: "/userAccess/categoryIds/3", problem: "'usage' is listed twice" },
      { path: "/guardian/allowedToDisable/1/thirdPartyIds/0", problem: "unknown third party of 'payments' 'adco'" },
      { path: "/guardian/allowedToDisable/2/purposeId", problem: "unknown platform sharing purpose 'service'" },
      { path: "/contractualExchange/purposes/0/terms/0/platformUsePurposeIds/1", problem: "unknown platform use purpose 'payments'" },
      { path: "/contractualExchange/purposes/0/terms/0/platformSharingPurposeIds/0", problem: "unknown platform sharing purpose 'ghost'" },
      { path: "/consentedSharing/purposes/0/terms/0/requestedCategoryIds/2", problem: "unknown category 'contact.email'" },
    ],
  );
});

test("a sharing ceiling wider than its linked platform use, and a third party wider than the ceiling", () => {
  assert.deepEqual(
    problemsOf((c) => {
      c.platformSharing.purposes[0].categoryCeilingIds.push("contact");
      c.platformSharing.purposes[0].thirdParties[0].categoryIds = ["usage", "identity"];
      c.platformSharing.purposes[1].platformUsePurposeId = "missing";
    }),
    [
      {
        path: "/platformSharing/purposes/0/categoryCeilingIds/2",
        problem: "category 'contact' is wider than the linked platform use purpose 'personalization' allows",
      },
      { path: "/platformSharing/purposes/0/thirdParties/0/categoryIds/1", problem: "unknown category within this purpose's ceiling 'identity'" },
      { path: "/platformSharing/purposes/1/platformUsePurposeId", problem: "unknown platform use purpose 'missing'" },
    ],
  );
});

test("overrides: property must be age or location, an age is one whole number, purposes of the right kind", () => {
  assert.deepEqual(
    problemsOf((c) => {
      (c.platformUse.overrides[0] as { propertyName: string }).propertyName = "income";
    }),
    [{ path: "/platformUse/overrides/0/propertyName", problem: "must be equal to one of the allowed values" }],
  );
  assert.deepEqual(
    problemsOf((c) => {
      c.platformUse.overrides[0].values = ["12.5"];
      c.platformSharing.overrides[0].values = ["16", "18"];
      c.platformUse.overrides[1].values.push("not a region", "DEU", "us-ca");
      c.platformSharing.overrides[0].allowedPurposeIds.push("service");
      // A platform-use override may list sharing purposes (it drops every purpose it does not list); an unknown id is refused.
      c.platformUse.overrides[0].allowedPurposeIds.push("payments", "no-such-purpose");
    }),
    [
      { path: "/platformUse/overrides/0/values/0", problem: "age threshold '12.5' is not a whole number" },
      { path: "/platformUse/overrides/0/allowedPurposeIds/2", problem: "unknown platform use, contractual or platform sharing purpose 'no-such-purpose'" },
      {
        path: "/platformUse/overrides/1/values/2",
        problem: "'not a region' is not a region code (ISO 3166-1 alpha-2, optionally with an ISO 3166-2 subdivision: DE, US, US-CA)",
      },
      // An alpha-3 code no user's location can be (they are refused at PUT /user) would never apply.
      {
        path: "/platformUse/overrides/1/values/3",
        problem: "'DEU' is not a region code (ISO 3166-1 alpha-2, optionally with an ISO 3166-2 subdivision: DE, US, US-CA)",
      },
      { path: "/platformSharing/overrides/0/values", problem: "an age override has exactly one value: the threshold age" },
      { path: "/platformSharing/overrides/0/allowedPurposeIds/1", problem: "unknown platform sharing purpose 'service'" },
    ],
  );
});

test("mapping groups: existing category, a field of that category, unique names and record fields", () => {
  assert.deepEqual(
    problemsOf((c) => {
      c.mappingGroups[0].fieldMappings.push(
        { recordField: "users.phone", categoryId: "identity", fieldId: "contact.phone" },
        { recordField: "users.x", categoryId: "ghost" },
        { recordField: "users.y", fieldId: "ghost.field" },
        { recordField: "users.email", categoryId: "contact" },
        // An object mapped beside a field inside it: the object's mapping would decide for the field.
        { recordField: "users.profile", categoryId: "usage" },
        { recordField: "users.profile.name", categoryId: "identity" },
      );
      c.mappingGroups.push({ name: "users-table", fieldMappings: [] });
    }),
    [
      { path: "/mappingGroups/0/fieldMappings/5/fieldId", problem: "field 'contact.phone' belongs to category 'contact', not 'identity'" },
      { path: "/mappingGroups/0/fieldMappings/6/categoryId", problem: "unknown category 'ghost'" },
      { path: "/mappingGroups/0/fieldMappings/7/fieldId", problem: "unknown field 'ghost.field'" },
      { path: "/mappingGroups/0/fieldMappings/8/recordField", problem: "record field 'users.email' is mapped twice in this group" },
      {
        path: "/mappingGroups/0/fieldMappings/9/recordField",
        problem: "record field 'users.profile' holds 'users.profile.name', which is mapped too: map the fields inside it one by one instead",
      },
      { path: "/mappingGroups/2/name", problem: "duplicate mapping group name 'users-table' (also at /mappingGroups/0)" },
    ],
  );
});

test("shape: unknown keys (a misspelling, __proto__) and wrong types are listed, all at once", () => {
  const draft = JSON.parse(JSON.stringify(realisticPolicy()));
  draft.categories[0].feilds = [];
  draft.guardian.thresholdAge = "13";
  // As a request body arrives: "__proto__" is an own key of the parsed object.
  const text = JSON.stringify(draft).replace('"userAccess":{', '"userAccess":{"__proto__":{"polluted":true},');
  const result = checkPolicyConfig(JSON.parse(text));
  assert.equal(result.ok, false);
  assert.deepEqual(!result.ok && result.problems, [
    { path: "/categories/0/feilds", problem: "unknown key 'feilds'" },
    { path: "/userAccess/__proto__", problem: "unknown key '__proto__'" },
    { path: "/guardian", problem: "must be null" },
    { path: "/guardian/thresholdAge", problem: "must be integer" },
    { path: "/guardian", problem: "must match a schema in anyOf" },
  ]);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test("the personalized terms are bounded: purposes × the fields of their categories at most maxTermsFields", () => {
  const fields = (prefix: string) => Array.from({ length: 1000 }, (_, i) => ({ stableId: `${prefix}-f${i}`, name: `Field ${i}` }));
  const wide = (purposes: number) =>
    problemsOf((c) => {
      c.categories.push({ stableId: "wide-a", name: "Wide A", fields: fields("a") }, { stableId: "wide-b", name: "Wide B", fields: fields("b") });
      for (let i = 0; i < purposes; i++) c.platformUse.purposes.push({ stableId: `p${i}`, name: `Purpose ${i}`, categoryIds: ["wide-a", "wide-b"] });
    });
  // 99 purposes × 2,000 fields, plus the realistic configuration's own: under the bound.
  assert.deepEqual(wide(99), []);
  const over = wide(101);
  assert.equal(over.length, 1);
  assert.equal(over[0]!.path, "");
  assert.match(over[0]!.problem, /would list \d+ category fields .*at most 200000/);
  assert.equal(maxTermsFields, 200_000);
});
