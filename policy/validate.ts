import type { Category, Override, PlatformSharingPurpose, PolicyConfig, Problem } from "./model";
import { regionCode } from "./region-code";

/**
 * Checks what a schema cannot: identity and references across the whole configuration
 * (policy-semantics section 7). Pure; expects input the schema accepted. Returns every
 * problem found, each with a JSON pointer into the configuration document.
 *
 * - stable ids are unique across the configuration (third parties excepted: the same party
 *   may appear under several sharing purposes, but once per purpose);
 * - every referenced id exists, and is of the kind the reference needs;
 * - a sharing purpose's ceiling stays within its linked platform use purpose, and a third
 *   party's narrower set within the ceiling;
 * - overrides test `age` (one whole number) or `location`; platform-use overrides name
 *   platform use or contractual purposes, sharing overrides name sharing purposes;
 * - guardian flows name sharing purposes and their own third parties;
 * - a mapping names an existing category, and a field of that category;
 * - mapping group names, and record fields within a group, are unique.
 */
/** Names of built-in object properties: ids end up as keys of stored records. */
const reservedIds = new Set(["__proto__", "constructor", "prototype", "toString", "valueOf", "hasOwnProperty"]);

/**
 * Category fields the personalized terms may list at most: every platform use and sharing purpose
 * lists each field of each of its categories, so the terms grow as purposes × fields. 185 KB of
 * configuration (4,000 purposes over 1,000 fields) made 131 MB of terms and blocked the event loop
 * for 3.4 s on every terms read (adversarial review); this bounds them to some tens of megabytes.
 */
export const maxTermsFields = 200_000;

export function validatePolicy(config: PolicyConfig): Problem[] {
  const problems: Problem[] = [];
  const report = (path: string, problem: string) => problems.push({ path, problem });

  const firstSeenAt = new Map<string, string>();
  const claimId = (id: string | undefined, path: string) => {
    if (id === undefined) return;
    if (reservedIds.has(id)) report(`${path}/stableId`, `'${id}' is reserved and cannot be a stableId`);
    const earlier = firstSeenAt.get(id);
    if (earlier) report(`${path}/stableId`, `duplicate stableId '${id}' (also at ${earlier})`);
    else firstSeenAt.set(id, path);
  };

  const categories = new Map<string, Category>();
  const fieldCategory = new Map<string, string>();
  config.categories.forEach((category, i) => {
    const path = `/categories/${i}`;
    // The first definition of a duplicated id stays the one references resolve to.
    claimId(category.stableId, path);
    if (!categories.has(category.stableId)) categories.set(category.stableId, category);
    category.fields.forEach((field, j) => {
      claimId(field.stableId, `${path}/fields/${j}`);
      if (!fieldCategory.has(field.stableId)) fieldCategory.set(field.stableId, category.stableId);
    });
  });

  const platformUse = new Map(config.platformUse.purposes.map((p) => [p.stableId, p]));
  const sharing = new Map<string, PlatformSharingPurpose>(config.platformSharing.purposes.map((p) => [p.stableId, p]));
  const contractual = new Set(config.contractualExchange.purposes.map((p) => p.stableId));
  config.platformUse.purposes.forEach((p, i) => claimId(p.stableId, `/platformUse/purposes/${i}`));
  config.platformSharing.purposes.forEach((p, i) => claimId(p.stableId, `/platformSharing/purposes/${i}`));
  config.contractualExchange.purposes.forEach((p, i) => {
    claimId(p.stableId, `/contractualExchange/purposes/${i}`);
    p.terms.forEach((t, j) => claimId(t.stableId, `/contractualExchange/purposes/${i}/terms/${j}`));
  });
  config.consentedSharing.purposes.forEach((p, i) => {
    claimId(p.stableId, `/consentedSharing/purposes/${i}`);
    p.terms.forEach((t, j) => claimId(t.stableId, `/consentedSharing/purposes/${i}/terms/${j}`));
  });
  config.platformUse.overrides.forEach((o, i) => claimId(o.stableId, `/platformUse/overrides/${i}`));
  config.platformSharing.overrides.forEach((o, i) => claimId(o.stableId, `/platformSharing/overrides/${i}`));

  /** Each id must exist in `known`; an id listed twice is reported too. */
  const checkRefs = (ids: readonly string[], path: string, known: (id: string) => boolean, what: string) => {
    const listed = new Set<string>();
    ids.forEach((id, k) => {
      if (listed.has(id)) report(`${path}/${k}`, `'${id}' is listed twice`);
      listed.add(id);
      if (!known(id)) report(`${path}/${k}`, `unknown ${what} '${id}'`);
    });
  };
  const isCategory = (id: string) => categories.has(id);

  config.platformUse.purposes.forEach((p, i) => checkRefs(p.categoryIds, `/platformUse/purposes/${i}/categoryIds`, isCategory, "category"));

  config.platformSharing.purposes.forEach((p, i) => {
    const path = `/platformSharing/purposes/${i}`;
    checkRefs(p.categoryCeilingIds, `${path}/categoryCeilingIds`, isCategory, "category");
    if (p.platformUsePurposeId !== undefined) {
      const linked = platformUse.get(p.platformUsePurposeId);
      if (!linked) report(`${path}/platformUsePurposeId`, `unknown platform use purpose '${p.platformUsePurposeId}'`);
      else {
        const allowed = new Set(linked.categoryIds);
        p.categoryCeilingIds.forEach((id, k) => {
          if (isCategory(id) && !allowed.has(id))
            report(`${path}/categoryCeilingIds/${k}`, `category '${id}' is wider than the linked platform use purpose '${linked.stableId}' allows`);
        });
      }
    }
    const ceiling = new Set(p.categoryCeilingIds);
    const parties = new Set<string>();
    p.thirdParties.forEach((party, j) => {
      const partyPath = `${path}/thirdParties/${j}`;
      if (parties.has(party.stableId)) report(`${partyPath}/stableId`, `third party '${party.stableId}' is listed twice in this purpose`);
      parties.add(party.stableId);
      if (reservedIds.has(party.stableId)) report(`${partyPath}/stableId`, `'${party.stableId}' is reserved and cannot be a stableId`);
      const clash = firstSeenAt.get(party.stableId);
      if (clash) report(`${partyPath}/stableId`, `stableId '${party.stableId}' is already used at ${clash}`);
      if (party.categoryIds) checkRefs(party.categoryIds, `${partyPath}/categoryIds`, (id) => ceiling.has(id), "category within this purpose's ceiling");
    });
  });

  const checkOverride = (o: Override, path: string, knownPurpose: (id: string) => boolean, what: string) => {
    if (o.propertyName === "age") {
      if (o.values.length !== 1) report(`${path}/values`, "an age override has exactly one value: the threshold age");
      else if (!/^\d+$/.test(o.values[0])) report(`${path}/values/0`, `age threshold '${o.values[0]}' is not a whole number`);
    } else {
      o.values.forEach((v, k) => {
        // The same codes users' locations must be: an override on a code no user can have would never apply.
        if (!regionCode.test(v))
          report(`${path}/values/${k}`, `'${v}' is not a region code (ISO 3166-1 alpha-2, optionally with an ISO 3166-2 subdivision: DE, US, US-CA)`);
      });
    }
    checkRefs(o.allowedPurposeIds, `${path}/allowedPurposeIds`, knownPurpose, what);
  };
  config.platformUse.overrides.forEach((o, i) =>
    checkOverride(
      o,
      `/platformUse/overrides/${i}`,
      (id) => platformUse.has(id) || contractual.has(id) || sharing.has(id),
      "platform use, contractual or platform sharing purpose",
    ),
  );
  config.platformSharing.overrides.forEach((o, i) => checkOverride(o, `/platformSharing/overrides/${i}`, (id) => sharing.has(id), "platform sharing purpose"));

  checkRefs(config.userAccess.categoryIds, "/userAccess/categoryIds", isCategory, "category");

  if (config.guardian) {
    checkRefs(config.guardian.categoryIds, "/guardian/categoryIds", isCategory, "category");
    config.guardian.allowedToDisable.forEach((flow, i) => {
      const path = `/guardian/allowedToDisable/${i}`;
      const purpose = sharing.get(flow.purposeId);
      if (!purpose) report(`${path}/purposeId`, `unknown platform sharing purpose '${flow.purposeId}'`);
      const parties = new Set(purpose?.thirdParties.map((t) => t.stableId) ?? []);
      checkRefs(flow.thirdPartyIds, `${path}/thirdPartyIds`, (id) => !purpose || parties.has(id), `third party of '${flow.purposeId}'`);
    });
  }

  config.contractualExchange.purposes.forEach((p, i) =>
    p.terms.forEach((t, j) => {
      const path = `/contractualExchange/purposes/${i}/terms/${j}`;
      checkRefs(t.contractAccessCategoryIds, `${path}/contractAccessCategoryIds`, isCategory, "category");
      checkRefs(t.platformUsePurposeIds, `${path}/platformUsePurposeIds`, (id) => platformUse.has(id), "platform use purpose");
      checkRefs(t.platformSharingPurposeIds, `${path}/platformSharingPurposeIds`, (id) => sharing.has(id), "platform sharing purpose");
    }),
  );

  config.consentedSharing.purposes.forEach((p, i) =>
    p.terms.forEach((t, j) => checkRefs(t.requestedCategoryIds, `/consentedSharing/purposes/${i}/terms/${j}/requestedCategoryIds`, isCategory, "category")),
  );

  const groupNames = new Map<string, number>();
  config.mappingGroups.forEach((group, i) => {
    const path = `/mappingGroups/${i}`;
    if (groupNames.has(group.name))
      report(`${path}/name`, `duplicate mapping group name '${group.name}' (also at /mappingGroups/${groupNames.get(group.name)})`);
    else groupNames.set(group.name, i);
    const recordFields = new Set<string>();
    group.fieldMappings.forEach((m, j) => {
      const mappingPath = `${path}/fieldMappings/${j}`;
      if (recordFields.has(m.recordField)) report(`${mappingPath}/recordField`, `record field '${m.recordField}' is mapped twice in this group`);
      recordFields.add(m.recordField);
      // An object mapped and a field inside it mapped too (`profile` and `profile.name`): redaction keeps or empties the
      // object whole under its own category, so the inner field's category would never be asked (policy-semantics 4).
      const inside = group.fieldMappings.find((other) => other.recordField.startsWith(`${m.recordField}.`));
      if (inside)
        report(
          `${mappingPath}/recordField`,
          `record field '${m.recordField}' holds '${inside.recordField}', which is mapped too: map the fields inside it one by one instead`,
        );
      if (m.categoryId !== undefined && !categories.has(m.categoryId)) report(`${mappingPath}/categoryId`, `unknown category '${m.categoryId}'`);
      if (m.fieldId !== undefined) {
        const owner = fieldCategory.get(m.fieldId);
        if (!owner) report(`${mappingPath}/fieldId`, `unknown field '${m.fieldId}'`);
        else if (m.categoryId !== undefined && categories.has(m.categoryId) && owner !== m.categoryId) {
          report(`${mappingPath}/fieldId`, `field '${m.fieldId}' belongs to category '${owner}', not '${m.categoryId}'`);
        }
      }
    });
  });

  const fieldsOf = (ids: readonly string[]) => ids.reduce((sum, id) => sum + (categories.get(id)?.fields.length ?? 0), 0);
  const termsFields =
    config.platformUse.purposes.reduce((sum, p) => sum + fieldsOf(p.categoryIds), 0) +
    config.platformSharing.purposes.reduce((sum, p) => sum + fieldsOf(p.categoryCeilingIds), 0);
  if (termsFields > maxTermsFields)
    report(
      "",
      `the personalized terms would list ${termsFields} category fields (each purpose lists every field of its categories); at most ${maxTermsFields}: fewer purposes, or fewer fields per category`,
    );

  return problems;
}
