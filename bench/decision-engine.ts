import { performance } from "node:perf_hooks";
import { reportFigure } from "./report";
import { compilePolicy } from "../decision/compiled-policy";
import { decide } from "../decision/engine";
import { personalizedTerms } from "../decision/terms";
import type { DecisionRequest, UserPolicyState } from "../decision/types";
import type { PolicyConfig } from "../policy/model";

/**
 * Engine decisions per second, in process, one core, warm (compiled policy and user states in
 * memory), for a typical configuration: 20 categories, 50 purposes (30 platform use of which 5
 * opt-in, 15 sharing with 3 third parties each, 5 contractual) and 10 overrides; 1,000 users.
 * Baseline in the same run: looking the answer up in a precomputed Map (a perfect cache).
 * Target: at least 1,000,000 decisions per second.
 */
function typicalPolicy(): PolicyConfig {
  const categories = Array.from({ length: 20 }, (_, c) => ({
    stableId: `cat${c}`,
    name: `Category ${c}`,
    fields: Array.from({ length: 5 }, (_, f) => ({ stableId: `cat${c}.f${f}`, name: `Field ${f}` })),
  }));
  const pick = (seed: number, n: number) => Array.from({ length: n }, (_, i) => `cat${(seed * 7 + i * 3) % 20}`).filter((v, i, all) => all.indexOf(v) === i);
  const use = Array.from({ length: 30 }, (_, p) => ({
    stableId: `use${p}`,
    name: `Use ${p}`,
    categoryIds: pick(p, 6),
    ...(p % 6 === 5 ? { optIn: true } : {}),
  }));
  const sharing = Array.from({ length: 15 }, (_, p) => ({
    stableId: `share${p}`,
    name: `Share ${p}`,
    platformUsePurposeId: `use${p}`,
    categoryCeilingIds: use[p].categoryIds.slice(0, 3),
    thirdParties: Array.from({ length: 3 }, (_, t) => ({ stableId: `tp${p}-${t}`, name: `Party ${t}`, serviceProvider: t === 0 })),
  }));
  const contractual = Array.from({ length: 5 }, (_, p) => ({
    stableId: `contract${p}`,
    name: `Contract ${p}`,
    terms: [
      {
        stableId: `contract${p}-terms`,
        name: "Terms",
        contractAccessCategoryIds: pick(p, 3),
        platformUsePurposeIds: [`use${p}`, `use${p + 1}`],
        platformSharingPurposeIds: [`share${p}`],
      },
    ],
  }));
  const overrides = Array.from({ length: 8 }, (_, o) =>
    o % 2 === 0
      ? { name: `Age ${o}`, propertyName: "age" as const, values: [String(10 + o)], allowedPurposeIds: use.slice(0, 20 + o).map((p) => p.stableId) }
      : { name: `Region ${o}`, propertyName: "location" as const, values: [`R${o}`], allowedPurposeIds: use.slice(o).map((p) => p.stableId) },
  );
  return {
    categories,
    platformUse: { purposes: use, overrides },
    platformSharing: {
      purposes: sharing,
      overrides: [
        { name: "Under 16", propertyName: "age", values: ["16"], allowedPurposeIds: ["share0"] },
        { name: "Region R2", propertyName: "location", values: ["R2"], allowedPurposeIds: ["share1", "share2"] },
      ],
    },
    userAccess: { categoryIds: ["cat0"] },
    guardian: { thresholdAge: 13, allowedToDisable: [{ purposeId: "share3", thirdPartyIds: ["tp3-1"] }], categoryIds: ["cat0"] },
    contractualExchange: { purposes: contractual },
    consentedSharing: { purposes: [] },
    mappingGroups: [],
  };
}

function main(): void {
  const now = new Date();
  const policy = compilePolicy(typicalPolicy(), 1);
  const users: UserPolicyState[] = Array.from({ length: 1000 }, (_, u) => {
    const attributes = { dob: `${1950 + (u % 60)}-0${1 + (u % 9)}-1${u % 9}`, location: u % 10 === 3 ? "R3-X" : "US-CA" };
    const terms = personalizedTerms(policy, { attributes }, now);
    const optIns: UserPolicyState["optIns"] = u % 2 ? { use5: {} } : {};
    return {
      userId: `u${u}`,
      attributes,
      optIns,
      consents: {},
      disabledFlows: [],
      acceptance: { termsHash: terms.hash, grants: terms.grants, acceptedAt: now.toISOString() },
    };
  });
  const requests: DecisionRequest[] = [
    ...Array.from({ length: 30 }, (_, p): DecisionRequest => ({ type: "platformUse", purposeId: `use${p}` })),
    ...Array.from({ length: 15 }, (_, p): DecisionRequest => ({ type: "platformSharing", purposeId: `share${p}`, thirdPartyId: `tp${p}-1` })),
  ];
  const precomputed = new Map<string, boolean>();
  for (const user of users) for (const request of requests) precomputed.set(`${user.userId}|${request.purposeId}`, decide(policy, user, request, now).allowed);

  const total = 3_000_000;
  const run = (label: string, one: (user: UserPolicyState, request: DecisionRequest) => boolean) => {
    let allowed = 0;
    for (let i = 0; i < 200_000; i++) if (one(users[i % 1000], requests[i % requests.length])) allowed++; // warm up
    const start = performance.now();
    for (let i = 0; i < total; i++) if (one(users[(i * 7) % 1000], requests[i % requests.length])) allowed++;
    const perSecond = total / ((performance.now() - start) / 1000);
    process.stdout.write(`${label}: ${Math.round(perSecond).toLocaleString("en")} per second (${allowed} allowed)\n`);
    return perSecond;
  };
  const lookup = run("baseline (Map lookup of a precomputed answer)", (user, request) => precomputed.get(`${user.userId}|${request.purposeId}`)!);
  const engine = run("engine decide()", (user, request) => decide(policy, user, request, now).allowed);
  process.stdout.write(`engine / lookup: ${(engine / lookup).toFixed(2)}x; engine vs target (1,000,000/s): ${(engine / 1_000_000).toFixed(2)}x\n`);
  reportFigure({
    figure: "decision engine decisions per second, one core",
    measured: `${Math.round(engine).toLocaleString("en")}/s`,
    baseline: `lookup ${Math.round(lookup).toLocaleString("en")}/s`,
    ratio: engine / 1_000_000,
    target: ">= 1,000,000/s",
    met: engine >= 1_000_000,
  });
}

main();
