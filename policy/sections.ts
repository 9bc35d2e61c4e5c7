import type {
  Category,
  ConsentedPurpose,
  ContractualPurpose,
  GuardianRights,
  MappingGroup,
  Override,
  PlatformSharingPurpose,
  PlatformUsePurpose,
  PolicyConfig,
  Problem,
} from "./model";

/**
 * The writes of spec 4.2 and 4.3, as pure functions over a configuration.
 * - Lists of identified items (categories, purposes, mapping groups) are upserted: each given
 *   item creates or replaces the item with the same stableId (mapping groups: name); items
 *   not given stay as they are. Deleting is a separate operation.
 * - Overrides may have no stableId, so a write replaces the whole list it names.
 * - User access and guardian rights are single objects, replaced.
 */
export type SectionWrite =
  | { section: "categories"; items: Category[] }
  | { section: "platformUse"; items: PlatformUsePurpose[] }
  | { section: "platformUseOverrides"; items: Override[] }
  | { section: "platformSharing"; items: PlatformSharingPurpose[] }
  | { section: "platformSharingOverrides"; items: Override[] }
  | { section: "userAccess"; categoryIds: string[] }
  | { section: "guardian"; guardian: GuardianRights }
  | { section: "contractualExchange"; items: ContractualPurpose[] }
  | { section: "consentedSharing"; items: ConsentedPurpose[] }
  | { section: "mappingGroup"; group: MappingGroup };

function upsert<T>(current: readonly T[], given: readonly T[], keyOf: (item: T) => string): T[] {
  const next = [...current];
  const index = new Map(next.map((item, i) => [keyOf(item), i]));
  for (const item of given) {
    const at = index.get(keyOf(item));
    if (at === undefined) {
      index.set(keyOf(item), next.length);
      next.push(item);
    } else next[at] = item;
  }
  return next;
}

const byStableId = (item: { stableId: string }) => item.stableId;

export function applySectionWrite(config: PolicyConfig, write: SectionWrite): PolicyConfig {
  switch (write.section) {
    case "categories":
      return { ...config, categories: upsert(config.categories, write.items, byStableId) };
    case "platformUse":
      return { ...config, platformUse: { ...config.platformUse, purposes: upsert(config.platformUse.purposes, write.items, byStableId) } };
    case "platformUseOverrides":
      return { ...config, platformUse: { ...config.platformUse, overrides: write.items } };
    case "platformSharing":
      return { ...config, platformSharing: { ...config.platformSharing, purposes: upsert(config.platformSharing.purposes, write.items, byStableId) } };
    case "platformSharingOverrides":
      return { ...config, platformSharing: { ...config.platformSharing, overrides: write.items } };
    case "userAccess":
      return { ...config, userAccess: { categoryIds: write.categoryIds } };
    case "guardian":
      return { ...config, guardian: write.guardian };
    case "contractualExchange":
      return { ...config, contractualExchange: { purposes: upsert(config.contractualExchange.purposes, write.items, byStableId) } };
    case "consentedSharing":
      return { ...config, consentedSharing: { purposes: upsert(config.consentedSharing.purposes, write.items, byStableId) } };
    case "mappingGroup":
      return { ...config, mappingGroups: upsert(config.mappingGroups, [write.group], (group) => group.name) };
  }
}

/**
 * Items given twice in one upsert (same stableId) would silently merge, last one winning: they
 * are problems, with paths into the request body (`/categories/1/stableId`).
 */
export function duplicatesInWrite(write: SectionWrite): Problem[] {
  if (!("items" in write) || write.section.endsWith("Overrides")) return []; // override lists are replaced whole and validated with the configuration
  const bodyKey = write.section === "categories" ? "categories" : "purposes";
  const firstAt = new Map<string, number>();
  const problems: Problem[] = [];
  write.items.forEach((item, i) => {
    const id = (item as { stableId: string }).stableId;
    const earlier = firstAt.get(id);
    if (earlier === undefined) firstAt.set(id, i);
    else problems.push({ path: `/${bodyKey}/${i}/stableId`, problem: `stableId '${id}' is given twice in this write (also at /${bodyKey}/${earlier})` });
  });
  return problems;
}

/** Items that can be read and deleted one at a time, and the key that names them. */
export const itemKinds = [
  "category",
  "platformUsePurpose",
  "platformUseOverride",
  "platformSharingPurpose",
  "platformSharingOverride",
  "contractualPurpose",
  "consentedPurpose",
  "mappingGroup",
] as const;
export type ItemKind = (typeof itemKinds)[number];

type ListOf = {
  get: (config: PolicyConfig) => readonly unknown[];
  set: (config: PolicyConfig, items: unknown[]) => PolicyConfig;
  key: (item: never) => string | undefined;
};

const lists: Record<ItemKind, ListOf> = {
  category: { get: (c) => c.categories, set: (c, items) => ({ ...c, categories: items as Category[] }), key: byStableId },
  platformUsePurpose: {
    get: (c) => c.platformUse.purposes,
    set: (c, items) => ({ ...c, platformUse: { ...c.platformUse, purposes: items as PlatformUsePurpose[] } }),
    key: byStableId,
  },
  platformUseOverride: {
    get: (c) => c.platformUse.overrides,
    set: (c, items) => ({ ...c, platformUse: { ...c.platformUse, overrides: items as Override[] } }),
    key: (o: Override) => o.stableId,
  },
  platformSharingPurpose: {
    get: (c) => c.platformSharing.purposes,
    set: (c, items) => ({ ...c, platformSharing: { ...c.platformSharing, purposes: items as PlatformSharingPurpose[] } }),
    key: byStableId,
  },
  platformSharingOverride: {
    get: (c) => c.platformSharing.overrides,
    set: (c, items) => ({ ...c, platformSharing: { ...c.platformSharing, overrides: items as Override[] } }),
    key: (o: Override) => o.stableId,
  },
  contractualPurpose: {
    get: (c) => c.contractualExchange.purposes,
    set: (c, items) => ({ ...c, contractualExchange: { purposes: items as ContractualPurpose[] } }),
    key: byStableId,
  },
  consentedPurpose: {
    get: (c) => c.consentedSharing.purposes,
    set: (c, items) => ({ ...c, consentedSharing: { purposes: items as ConsentedPurpose[] } }),
    key: byStableId,
  },
  mappingGroup: { get: (c) => c.mappingGroups, set: (c, items) => ({ ...c, mappingGroups: items as MappingGroup[] }), key: (g: MappingGroup) => g.name },
};

export function findItem(config: PolicyConfig, kind: ItemKind, id: string): unknown {
  const list = lists[kind];
  return list.get(config).find((item) => list.key(item as never) === id);
}

/** The configuration without the item, or undefined when there is no such item. */
export function removeItem(config: PolicyConfig, kind: ItemKind, id: string): PolicyConfig | undefined {
  const list = lists[kind];
  const items = list.get(config);
  const remaining = items.filter((item) => list.key(item as never) !== id);
  return remaining.length === items.length ? undefined : list.set(config, remaining);
}
