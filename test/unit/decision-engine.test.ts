import { isChild } from "../../decision/children";
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { compilePolicy, type CompiledPolicy } from "../../decision/compiled-policy";
import { decide } from "../../decision/engine";
import { ageOn } from "../../decision/overrides";
import { grantsExceed, personalizedTerms } from "../../decision/terms";
import type { DecisionRequest, ReasonCode, UserPolicyState } from "../../decision/types";
import type { PolicyConfig } from "../../policy/model";
import { realisticPolicy } from "../../testkit/policy";

const now = new Date("2026-11-21T12:00:00Z");
const policy = compilePolicy(realisticPolicy(), 7);
const adult = { dob: "1990-05-01", location: "US-CA" };

function user(id: string, attributes: Record<string, string>, extra: Partial<UserPolicyState> = {}): UserPolicyState {
  return { userId: id, attributes, optIns: {}, consents: {}, disabledFlows: [], ...extra };
}

/** A user who accepted the personalized terms of `compiled` for their context. */
function accepted(id: string, attributes: Record<string, string>, extra: Partial<UserPolicyState> = {}, compiled: CompiledPolicy = policy): UserPolicyState {
  const base = user(id, attributes, extra);
  const terms = personalizedTerms(compiled, { attributes, contractualRelationship: base.contractualRelationship }, now);
  // A child's acceptance is a guardian's (policy-semantics 5).
  const acceptorId = isChild(compiled, base, now) ? "g-guardian" : undefined;
  return { ...base, acceptance: { termsHash: terms.hash, grants: terms.grants, acceptedAt: now.toISOString(), ...(acceptorId ? { acceptorId } : {}) } };
}

const use = (purposeId: string): DecisionRequest => ({ type: "platformUse", purposeId });
const share = (purposeId: string, thirdPartyId?: string): DecisionRequest => ({
  type: "platformSharing",
  purposeId,
  ...(thirdPartyId ? { thirdPartyId } : {}),
});
const contractual = (purposeId: string): DecisionRequest => ({ type: "contractualExchange", purposeId });
const consented = (purposeId: string, termsId: string): DecisionRequest => ({ type: "consentedSharing", purposeId, termsId });

/** [what, user, request, allowed categories (or the deciding reason when denied), flow] */
type Row = [string, UserPolicyState | undefined, DecisionRequest, string[] | ReasonCode, string];

function check(rows: Row[], compiled: CompiledPolicy = policy): void {
  for (const [what, subject, request, expected, flow] of rows) {
    const decision = decide(compiled, subject, request, now);
    assert.equal(decision.flow, flow, `${what}: flow`);
    if (Array.isArray(expected)) {
      assert.equal(decision.allowed, true, `${what}: allowed (${decision.summary})`);
      assert.deepEqual(decision.categoryIds, expected, `${what}: categories`);
    } else {
      assert.equal(decision.allowed, false, `${what}: denied (${decision.summary})`);
      assert.equal(decision.reasons.at(-1)!.code, expected, `${what}: reason (${decision.summary})`);
    }
  }
}

const reseller = { contractualRelationship: { purposeId: "reseller", termsId: "reseller-2026" } };
const resellerStrict = { contractualRelationship: { purposeId: "reseller", termsId: "reseller-strict" } };
const studyConsent = { consents: { "research/research-study-1": { categoryIds: ["usage", "location"] } } };

describe("the table of policy-semantics section 2, row by row", () => {
  test("unknown user, or no user id: drop for every type", () => {
    check([
      ["platform use", undefined, use("service"), "UNKNOWN_USER", "platform"],
      ["platform sharing", undefined, share("payments"), "UNKNOWN_USER", "platform"],
      ["contractual", undefined, contractual("reseller"), "UNKNOWN_USER", "contractual"],
      ["consented", undefined, consented("research", "research-study-1"), "UNKNOWN_USER", "consent"],
    ]);
  });

  test("created, no terms accepted, no contract: drop for every type, even with a consent on record", () => {
    const created = user("u-created", adult, studyConsent);
    check([
      ["platform use", created, use("service"), "NO_TERMS_ACCEPTED", "platform"],
      ["platform sharing", created, share("payments"), "NO_TERMS_ACCEPTED", "platform"],
      ["contractual", created, contractual("reseller"), "NO_CONTRACT", "contractual"],
      ["consented", created, consented("research", "research-study-1"), "NO_TERMS_ACCEPTED", "consent"],
    ]);
  });

  test("third-party user: only what the contract lists, within its categories; consent only if recorded", () => {
    const thirdParty = user("u-3p", adult, reseller);
    check([
      ["a listed platform use purpose, limited to contract categories", thirdParty, use("service"), ["contact"], "contractual"],
      ["an unlisted platform use purpose", thirdParty, use("analytics"), "CONTRACT_EXCLUDES", "contractual"],
      ["an unlisted sharing purpose", thirdParty, share("payments"), "CONTRACT_EXCLUDES", "contractual"],
      ["the contract's own exchange", thirdParty, contractual("reseller"), ["contact"], "contractual"],
      ["consented sharing without consent", thirdParty, consented("research", "research-study-1"), "NO_CONSENT", "consent"],
      [
        "consented sharing with consent",
        user("u-3p-c", adult, { ...reseller, ...studyConsent }),
        consented("research", "research-study-1"),
        ["usage", "location"],
        "consent",
      ],
      [
        "a contract whose terms are gone",
        user("u-3p-x", adult, { contractualRelationship: { purposeId: "reseller", termsId: "gone" } }),
        use("service"),
        "CONTRACT_UNKNOWN",
        "contractual",
      ],
    ]);
  });

  test("accepted terms, no contract: accepted purposes after overrides; no contractual exchange; consent decides", () => {
    const member = accepted("u-acc", adult);
    check([
      ["core purpose", member, use("service"), ["contact", "credentials", "identity", "usage"], "platform"],
      ["another core purpose", member, use("analytics"), ["usage"], "platform"],
      ["opt-in purpose not opted in", member, use("personalization"), "NOT_OPTED_IN", "platform"],
      ["sharing to a service provider", member, share("payments", "payco"), ["contact", "identity"], "platform"],
      ["contractual exchange without a contract", member, contractual("reseller"), "NO_CONTRACT", "contractual"],
      ["consented sharing without consent", member, consented("research", "research-study-1"), "NO_CONSENT", "consent"],
      ["consented sharing with consent", accepted("u-acc-c", adult, studyConsent), consented("research", "research-study-1"), ["usage", "location"], "consent"],
    ]);
  });

  test("accepted terms and a contract: further limited by the contract; the contract decides its exchange", () => {
    const both = accepted("u-both", adult, reseller);
    check([
      ["a purpose the contract allows", both, use("service"), ["contact", "credentials", "identity", "usage"], "platform"],
      ["a purpose the contract does not list", both, use("analytics"), "CONTRACT_EXCLUDES", "platform"],
      ["the contract's exchange", both, contractual("reseller"), ["contact"], "contractual"],
      [
        "an empty platformUsePurposeIds list disallows every platform use purpose",
        accepted("u-strict", adult, resellerStrict),
        use("service"),
        "CONTRACT_EXCLUDES",
        "platform",
      ],
      ["... but its sharing purpose is allowed", accepted("u-strict2", adult, resellerStrict), share("payments"), ["contact", "identity"], "platform"],
    ]);
  });
});

describe("overrides (section 3)", () => {
  test("age: 13 today is not under 13; 12 until tomorrow is", () => {
    assert.equal(ageOn("2013-11-21", now), 13);
    assert.equal(ageOn("2013-11-22", now), 12);
    assert.equal(ageOn("2013-02-30", now), undefined, "not a real date");
    check([
      ["13th birthday today", accepted("u-13", { dob: "2013-11-21", location: "US" }), use("analytics"), ["usage"], "platform"],
      ["13th birthday tomorrow", accepted("u-12", { dob: "2013-11-22", location: "US" }), use("analytics"), "OVERRIDDEN", "platform"],
      [
        "the override's allowed purpose stays",
        accepted("u-12b", { dob: "2013-11-22", location: "US" }),
        use("service"),
        ["contact", "credentials", "identity", "usage"],
        "platform",
      ],
    ]);
  });

  test("location: a listed region and its sub-regions, case-insensitive; not a mere prefix", () => {
    check([
      ["GB", accepted("u-gb", { dob: "1990-01-01", location: "GB" }), use("analytics"), "OVERRIDDEN", "platform"],
      ["gb-sct", accepted("u-sct", { dob: "1990-01-01", location: "gb-sct" }), use("analytics"), "OVERRIDDEN", "platform"],
      // Not a region code (ISO 3166-1 alpha-2, optionally a subdivision): no location, so every location override applies (fail closed).
      // It had matched no listed region: "DEU" or "Deutschland" escaped a DE override.
      ["GBR is no region code", accepted("u-gbr", { dob: "1990-01-01", location: "GBR" }), use("analytics"), "OVERRIDDEN", "platform"],
      ["Deutschland", accepted("u-de", { dob: "1990-01-01", location: "Deutschland" }), use("analytics"), "OVERRIDDEN", "platform"],
      [
        "a sub-region of another region is not a prefix match",
        accepted("u-usgb", { dob: "1990-01-01", location: "US-GB" }),
        use("analytics"),
        ["usage"],
        "platform",
      ],
      [
        "EU allows the contractual purpose it lists",
        accepted("u-eu", { dob: "1990-01-01", location: "EU" }, reseller),
        contractual("reseller"),
        ["contact"],
        "contractual",
      ],
    ]);
  });

  test("a missing dob or location fails closed, and the reasons say why", () => {
    const noDob = decide(policy, accepted("u-nodob", { location: "US" }), use("analytics"), now);
    assert.equal(noDob.allowed, false);
    assert.deepEqual(
      noDob.reasons.map((r) => r.code),
      ["OVERRIDE_PROPERTY_MISSING", "OVERRIDDEN"],
    );
    assert.match(noDob.reasons[0].text, /no dob/);
    const noLocation = decide(policy, accepted("u-noloc", { dob: "1990-01-01" }), use("analytics"), now);
    assert.deepEqual(
      noLocation.reasons.map((r) => r.code),
      ["OVERRIDE_PROPERTY_MISSING", "OVERRIDDEN"],
    );
  });

  test("sharing overrides apply to sharing purposes only", () => {
    check([
      [
        "under 16: ads sharing dropped",
        accepted("u-15", { dob: "2011-01-01", location: "US" }, { optIns: { personalization: {} } }),
        share("ads-sharing", "geoads"),
        "OVERRIDDEN",
        "platform",
      ],
      ["under 16: payments kept", accepted("u-15b", { dob: "2011-01-01", location: "US" }), share("payments", "payco"), ["contact", "identity"], "platform"],
    ]);
  });

  test("sharing overrides do not touch platform use, and matching overrides intersect", () => {
    check([
      ["a 15-year-old keeps analytics", accepted("u-15c", { dob: "2011-01-01", location: "US" }), use("analytics"), ["usage"], "platform"],
      [
        "GB allows personalization but under-13 does not: dropped",
        accepted("u-gb10", { dob: "2016-06-01", location: "GB" }, { optIns: { personalization: {} } }),
        use("personalization"),
        "OVERRIDDEN",
        "platform",
      ],
      [
        "an override excludes a contractual purpose",
        accepted("u-kid-r", { dob: "2016-06-01", location: "US" }, reseller),
        contractual("reseller"),
        "OVERRIDDEN",
        "contractual",
      ],
    ]);
  });

  test("configured region codes match case-insensitively too", () => {
    const lower = realisticPolicy();
    lower.platformUse.overrides[1].values = ["gb"];
    check(
      [["GB-SCT under 'gb'", accepted("u-sct2", { dob: "1990-01-01", location: "GB-SCT" }), use("analytics"), "OVERRIDDEN", "platform"]],
      compilePolicy(lower, 12),
    );
  });

  test("overrides never apply to consented sharing", () => {
    check([
      [
        "a child with consent",
        // Given by a guardian, as a child's consent must be.
        accepted(
          "u-child-c",
          { dob: "2020-01-01" },
          { consents: { "research/research-study-1": { ...studyConsent.consents!["research/research-study-1"]!, grantorId: "g-guardian" } } },
        ),
        consented("research", "research-study-1"),
        ["usage", "location"],
        "consent",
      ],
    ]);
  });
});

describe("opt-in, acceptance versions, guardians, third parties, consent", () => {
  test("an opt-in purpose before opting in, after opting in (narrowed), and after revoking", () => {
    const before = accepted("u-opt", adult);
    const optedIn = { ...before, optIns: { personalization: { categoryIds: ["usage"] } } };
    const revoked = { ...optedIn, optIns: {} };
    check([
      ["before", before, use("personalization"), "NOT_OPTED_IN", "platform"],
      ["after, narrowed to usage", optedIn, use("personalization"), ["usage"], "platform"],
      ["after revoking", revoked, use("personalization"), "NOT_OPTED_IN", "platform"],
      ["sharing linked to the opt-in purpose needs it too", before, share("ads-sharing", "geoads"), "LINKED_PURPOSE_DENIED", "platform"],
      ["... and is allowed once opted in", { ...before, optIns: { personalization: {} } }, share("ads-sharing", "geoads"), ["usage", "location"], "platform"],
      ["... within the categories the user opted in with", optedIn, share("ads-sharing", "geoads"), ["usage"], "platform"],
    ]);
  });

  test("reacceptance: a purpose gains a category; the old acceptance keeps what it covered; the new category waits", () => {
    const member = accepted("u-v1", adult);
    const widened = realisticPolicy();
    widened.platformUse.purposes[0].categoryIds.push("location");
    const v2 = compilePolicy(widened, 8);
    const decision = decide(v2, member, use("service"), now);
    assert.deepEqual(decision.categoryIds, ["contact", "credentials", "identity", "usage"]);
    assert.ok(decision.reasons.some((r) => r.code === "NARROWED_BY_ACCEPTANCE"));
    assert.equal(grantsExceed(personalizedTerms(v2, { attributes: adult }, now).grants, member.acceptance!.grants), true, "reacceptRequired");
    const reaccepted = accepted("u-v1", adult, {}, v2);
    assert.deepEqual(decide(v2, reaccepted, use("service"), now).categoryIds, ["contact", "credentials", "identity", "usage", "location"]);
    assert.equal(grantsExceed(personalizedTerms(v2, { attributes: adult }, now).grants, reaccepted.acceptance!.grants), false);
  });

  test("narrowing takes effect at once and never asks for reacceptance", () => {
    const member = accepted("u-narrow", adult);
    const narrowed = realisticPolicy();
    narrowed.platformUse.purposes[0].categoryIds = ["contact"];
    narrowed.platformSharing.purposes[0].thirdParties.pop();
    const v2 = compilePolicy(narrowed, 9);
    assert.deepEqual(decide(v2, member, use("service"), now).categoryIds, ["contact"]);
    assert.equal(grantsExceed(personalizedTerms(v2, { attributes: adult }, now).grants, member.acceptance!.grants), false);
  });

  test("a sharing purpose that names caller assertions: shared only for a caller holding one (issue 26 item 2)", () => {
    const member = accepted("u-caller", adult);
    const gated = realisticPolicy();
    const payments = gated.platformSharing.purposes.find((purpose) => purpose.stableId === "payments")!;
    payments.callerAssertions = ["group:billing", "scope:share.payments"];
    const v2 = compilePolicy(gated, 11);
    const request = share("payments", "payco");
    assert.deepEqual(decide(policy, member, request, now).categoryIds, ["contact", "identity"], "without the rule any caller");
    for (const assertions of [["group:billing"], ["scope:openid", "scope:share.payments"]]) {
      const allowed = decide(v2, member, request, now, { assertions });
      assert.equal(allowed.allowed, true, assertions.join());
      assert.deepEqual(allowed.categoryIds, ["contact", "identity"]);
    }
    for (const caller of [undefined, { assertions: [] }, { assertions: ["group:support", "scope:share.ads", "claim:group=billing"] }]) {
      const denied = decide(v2, member, request, now, caller);
      assert.equal(denied.allowed, false, JSON.stringify(caller));
      assert.equal(denied.reasons.at(-1)!.code, "CALLER_ASSERTION_MISSING");
    }
  });

  test("a third party added after acceptance is not usable until the user accepts again", () => {
    const member = accepted("u-tp", adult, { optIns: { personalization: {} } });
    const more = realisticPolicy();
    more.platformSharing.purposes[0].thirdParties.push({ stableId: "newads", name: "NewAds", serviceProvider: false });
    const v2 = compilePolicy(more, 10);
    check([["new third party", member, share("ads-sharing", "newads"), "NOT_IN_ACCEPTED_TERMS", "platform"]], v2);
    assert.equal(grantsExceed(personalizedTerms(v2, { attributes: adult }, now).grants, member.acceptance!.grants), true);
  });

  test("a platform-use override drops sharing purposes it does not list, linked or not: 'all other purposes are dropped' (spec 2.4)", () => {
    const config = realisticPolicy();
    // No sharing override: what drops sharing here is the platform-use override alone.
    config.platformSharing.overrides = [];
    // An unlinked sharing purpose, which no platform use purpose's decision limits.
    config.platformSharing.purposes.push({
      stableId: "data-broker",
      name: "Data broker",
      categoryCeilingIds: ["contact", "usage"],
      thirdParties: [{ stableId: "brokerco", name: "BrokerCo", serviceProvider: false }],
    });
    const compiled = compilePolicy(config, 12);
    const child = { dob: "2016-03-01", location: "US" };
    const kid = accepted("u-kid2", child, {}, compiled);
    const grown = accepted("u-adult2", adult, {}, compiled);
    check(
      [
        ["a child: the under-13 override lists only service", kid, share("data-broker", "brokerco"), "OVERRIDDEN", "platform"],
        ["a child: payments, linked to service, is not listed either", kid, share("payments"), "OVERRIDDEN", "platform"],
        ["an adult matches no override", grown, share("data-broker", "brokerco"), ["contact", "usage"], "platform"],
      ],
      compiled,
    );
    assert.ok(
      personalizedTerms(compiled, { attributes: child }, now).omitted.some((o) => o.purposeId === "data-broker"),
      "and the child's terms leave it out",
    );
    config.platformUse.overrides[0].allowedPurposeIds.push("data-broker");
    const listed = compilePolicy(config, 13);
    check(
      [["listed by the override: allowed", accepted("u-kid3", child, {}, listed), share("data-broker", "brokerco"), ["contact", "usage"], "platform"]],
      listed,
    );
  });

  test("a child's own acceptance (given before they were a child under the policy) counts for nothing: only a guardian's does", () => {
    const child = { dob: "2016-03-01", location: "US" };
    const guardianAccepted = accepted("u-kid4", child);
    const ownAcceptance = { ...guardianAccepted, acceptance: { ...guardianAccepted.acceptance!, acceptorId: undefined } };
    check([["accepted by a guardian", guardianAccepted, use("service"), ["contact", "credentials", "identity", "usage"], "platform"]]);
    const decision = decide(policy, ownAcceptance, use("service"), now);
    assert.equal(decision.allowed, false, "accepted by the child themself: denied");
    assert.deepEqual(
      decision.reasons.map((r) => r.code),
      ["CHILD_ACCEPTED_WITHOUT_GUARDIAN", "NO_TERMS_ACCEPTED"],
    );
    // An adult's own acceptance is theirs to give.
    check([["an adult", accepted("u-adult4", adult), use("service"), ["contact", "credentials", "identity", "usage"], "platform"]]);
  });

  test("a child's own opt-ins and consents (given before they were a child under the policy) count for nothing: only a guardian's do", () => {
    const raised = realisticPolicy();
    raised.guardian!.thresholdAge = 18;
    const compiled = compilePolicy(raised, 15);
    const teen = { dob: "2012-01-01", location: "US" };
    const given = (grantor: { grantorId?: string }) =>
      accepted(
        "u-teen",
        teen,
        { optIns: { personalization: { ...grantor } }, consents: { "research/research-study-1": { categoryIds: ["usage"], ...grantor } } },
        compiled,
      );
    const own = given({});
    const ownOptIn = decide(compiled, own, use("personalization"), now);
    assert.equal(ownOptIn.allowed, false, "the teen's own opt-in: denied");
    assert.deepEqual(ownOptIn.reasons.map((r) => r.code).slice(0, 1), ["CHILD_CONSENTED_WITHOUT_GUARDIAN"]);
    const ownConsent = decide(compiled, own, consented("research", "research-study-1"), now);
    assert.equal(ownConsent.allowed, false, "the teen's own consent: denied");
    assert.deepEqual(
      ownConsent.reasons.map((r) => r.code),
      ["CHILD_CONSENTED_WITHOUT_GUARDIAN", "NO_CONSENT"],
    );
    const byGuardian = given({ grantorId: "g-guardian" });
    assert.equal(decide(compiled, byGuardian, use("personalization"), now).allowed, true, "a guardian's opt-in counts");
    assert.deepEqual(decide(compiled, byGuardian, consented("research", "research-study-1"), now).categoryIds, ["usage"], "a guardian's consent counts");
    // An adult's own are theirs to give.
    const adultOwn = accepted("u-adult5", adult, { optIns: { personalization: {} }, consents: { "research/research-study-1": { categoryIds: ["usage"] } } });
    assert.equal(decide(policy, adultOwn, use("personalization"), now).allowed, true);
    assert.equal(decide(policy, adultOwn, consented("research", "research-study-1"), now).allowed, true);
  });

  test("sharing with no third party named: every party's limits apply, and every party must be in the accepted terms", () => {
    // ads-sharing: adco receives usage only, geoads the whole ceiling (usage, location); the adult opted in to the linked personalization.
    const optedIn = accepted("u-any", adult, { optIns: { personalization: {} } });
    check([
      ["adco named", optedIn, share("ads-sharing", "adco"), ["usage"], "platform"],
      ["geoads named", optedIn, share("ads-sharing", "geoads"), ["usage", "location"], "platform"],
      ["no party named: what every party may receive", optedIn, share("ads-sharing"), ["usage"], "platform"],
    ]);
    // A party added after the user accepted: named, it is not usable; unnamed, it could be the receiver, so neither is.
    const widened = realisticPolicy();
    widened.platformSharing.purposes.find((p) => p.stableId === "payments")!.thirdParties.push({ stableId: "broker", name: "Broker", serviceProvider: false });
    const v2 = compilePolicy(widened, 16);
    const acceptedBefore = accepted("u-broker", adult);
    check(
      [
        ["the new party named", acceptedBefore, share("payments", "broker"), "NOT_IN_ACCEPTED_TERMS", "platform"],
        ["no party named", acceptedBefore, share("payments"), "NOT_IN_ACCEPTED_TERMS", "platform"],
        ["a party the user accepted, named", acceptedBefore, share("payments", "payco"), ["contact", "identity"], "platform"],
      ],
      v2,
    );
  });

  test("a sharing purpose's link removed after the user accepted still limits it until they accept again (removing it widens)", () => {
    // ads-sharing is linked to the opt-in personalization; the adult never opted in.
    const notOptedIn = accepted("u-link", adult);
    check([["linked, not opted in", notOptedIn, share("ads-sharing", "geoads"), "LINKED_PURPOSE_DENIED", "platform"]]);
    const unlinked = realisticPolicy();
    delete unlinked.platformSharing.purposes[0].platformUsePurposeId;
    const v2 = compilePolicy(unlinked, 14);
    check([["the link removed: the accepted one still applies", notOptedIn, share("ads-sharing", "geoads"), "LINKED_PURPOSE_DENIED", "platform"]], v2);
    assert.equal(
      grantsExceed(personalizedTerms(v2, { attributes: adult }, now).grants, notOptedIn.acceptance!.grants),
      true,
      "and the user is asked to accept again",
    );
    check([["accepted again, unlinked", accepted("u-link", adult, {}, v2), share("ads-sharing", "geoads"), ["usage", "location"], "platform"]], v2);
  });

  test("a guardian disabling a sharing flow for one third party", () => {
    // Children may have personalization here, so its linked ads sharing can be allowed at all.
    const noSharingOverride = realisticPolicy();
    noSharingOverride.platformSharing.overrides = [];
    noSharingOverride.platformUse.overrides[0].allowedPurposeIds.push("personalization", "ads-sharing");
    const compiled = compilePolicy(noSharingOverride, 11);
    const child = { dob: "2016-03-01", location: "US" };
    const kid = accepted(
      "u-kid",
      child,
      { optIns: { personalization: { grantorId: "g-guardian" } }, disabledFlows: [{ purposeId: "ads-sharing", thirdPartyId: "adco" }] },
      compiled,
    );
    check(
      [
        ["the disabled third party", kid, share("ads-sharing", "adco"), "GUARDIAN_DISABLED", "platform"],
        ["another third party of the purpose", kid, share("ads-sharing", "geoads"), ["usage", "location"], "platform"],
        ["the purpose without naming the third party fails closed", kid, share("ads-sharing"), "GUARDIAN_DISABLED", "platform"],
      ],
      compiled,
    );
  });

  test("a third party removed from the configuration receives nothing", () => {
    const member = accepted("u-rm", adult, { optIns: { personalization: {} } });
    const fewer = realisticPolicy();
    fewer.platformSharing.purposes[0].thirdParties = fewer.platformSharing.purposes[0].thirdParties.filter((t) => t.stableId !== "geoads");
    check([["removed third party", member, share("ads-sharing", "geoads"), "UNKNOWN_THIRD_PARTY", "platform"]], compilePolicy(fewer, 13));
  });

  test("widening one third party's categories needs reacceptance; until then it keeps what was accepted", () => {
    const member = accepted("u-wide", adult, { optIns: { personalization: {} } });
    const wider = realisticPolicy();
    delete wider.platformSharing.purposes[0].thirdParties[0].categoryIds;
    const v2 = compilePolicy(wider, 14);
    check([["adco still gets usage only", member, share("ads-sharing", "adco"), ["usage"], "platform"]], v2);
    assert.equal(grantsExceed(personalizedTerms(v2, { attributes: adult }, now).grants, member.acceptance!.grants), true);
  });

  test("an opt-in purpose made core stays opt-in for a user until they accept again", () => {
    const member = accepted("u-core", adult);
    const core = realisticPolicy();
    core.platformUse.purposes[1].optIn = false;
    const v2 = compilePolicy(core, 15);
    check([["still needs the opt-in", member, use("personalization"), "NOT_OPTED_IN", "platform"]], v2);
    assert.equal(grantsExceed(personalizedTerms(v2, { attributes: adult }, now).grants, member.acceptance!.grants), true);
    check([["after reaccepting, core", accepted("u-core", adult, {}, v2), use("personalization"), ["usage", "location"], "platform"]], v2);
  });

  test("a third-party user needs the opt-in of an opt-in purpose their contract lists", () => {
    const listing = realisticPolicy();
    listing.contractualExchange.purposes[0].terms[0].platformUsePurposeIds.push("personalization");
    listing.contractualExchange.purposes[0].terms[0].contractAccessCategoryIds.push("usage");
    const compiled = compilePolicy(listing, 16);
    check(
      [
        ["not opted in", user("u-3p-o", adult, reseller), use("personalization"), "NOT_OPTED_IN", "contractual"],
        ["opted in", user("u-3p-o2", adult, { ...reseller, optIns: { personalization: {} } }), use("personalization"), ["usage"], "contractual"],
      ],
      compiled,
    );
  });

  test("a third party receiving a narrower set of categories", () => {
    check([["adco gets usage only", accepted("u-adco", adult, { optIns: { personalization: {} } }), share("ads-sharing", "adco"), ["usage"], "platform"]]);
  });

  test("consented sharing with a narrowed category set", () => {
    check([
      [
        "usage only",
        accepted("u-narrow-c", adult, { consents: { "research/research-study-1": { categoryIds: ["usage"] } } }),
        consented("research", "research-study-1"),
        ["usage"],
        "consent",
      ],
    ]);
  });

  test("unknown purposes and third parties are refused, never guessed", () => {
    const member = accepted("u-unknown", adult);
    check([
      ["unknown purpose", member, use("mining"), "UNKNOWN_PURPOSE", "platform"],
      ["a sharing purpose asked as platform use", member, use("payments"), "UNKNOWN_PURPOSE", "platform"],
      ["unknown third party", member, share("payments", "adco"), "UNKNOWN_THIRD_PARTY", "platform"],
      ["consented sharing without terms", member, { type: "consentedSharing", purposeId: "research" }, "UNKNOWN_PURPOSE", "consent"],
    ]);
  });
});

describe("personalized terms", () => {
  test("the default terms (empty context) list every purpose; a child's leave out the overridden ones, saying why", () => {
    const all = personalizedTerms(policy, {}, now);
    assert.deepEqual(
      all.platformUse.map((p) => p.stableId),
      ["service", "personalization", "analytics"],
    );
    assert.deepEqual(all.omitted, []);
    const child = personalizedTerms(policy, { attributes: { dob: "2016-01-01", location: "US" } }, now);
    assert.deepEqual(
      child.platformUse.map((p) => p.stableId),
      ["service"],
    );
    assert.deepEqual(child.omitted, [
      { purposeId: "personalization", reason: "override 'Children under 13' applies" },
      { purposeId: "analytics", reason: "override 'Children under 13' applies" },
      { purposeId: "ads-sharing", reason: "override 'Under 16: no ads sharing' applies" },
      // A platform-use override drops every purpose it does not list, sharing purposes too (spec 2.4).
      { purposeId: "payments", reason: "override 'Children under 13' applies" },
    ]);
    assert.notEqual(child.hash, all.hash);
  });

  test("contract terms carry the category details; the format is the same for every context", () => {
    const terms = personalizedTerms(policy, { attributes: adult, contractualRelationship: reseller.contractualRelationship }, now);
    assert.deepEqual(terms.contract?.categories, [
      {
        stableId: "contact",
        name: "Contact details",
        summary: "How we reach you",
        fullDetails: "Your email address and phone number, used to send you service messages.",
        fields: [
          { stableId: "contact.email", name: "Email" },
          { stableId: "contact.phone", name: "Phone", summary: "Mobile or landline" },
        ],
      },
    ]);
    assert.deepEqual(
      terms.platformUse.map((p) => p.stableId),
      ["service"],
      "limited to what the contract allows",
    );
    assert.deepEqual(Object.keys(terms).sort(), Object.keys(personalizedTerms(policy, {}, now)).sort());
  });

  test("the hash identifies the content: same content, same hash; a new category, a new hash", () => {
    assert.equal(
      personalizedTerms(policy, { attributes: adult }, now).hash,
      personalizedTerms(compilePolicy(realisticPolicy(), 99), { attributes: adult }, now).hash,
    );
    const changed: PolicyConfig = realisticPolicy();
    changed.platformUse.purposes[2].categoryIds.push("location");
    assert.notEqual(personalizedTerms(compilePolicy(changed, 8), { attributes: adult }, now).hash, personalizedTerms(policy, { attributes: adult }, now).hash);
  });
});
