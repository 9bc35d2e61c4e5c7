/**
 * The runtime's names on the wire and in JetStream, and the pure functions that place an actor.
 * One namespace for the whole cluster: subjects and keys, never a stream or consumer per actor.
 * Product subjects and streams live with the features that own them (redaction/jobs/subjects.ts,
 * exports/subjects.ts, proxies/pipeline/subjects.ts), under the same `warden.` prefix.
 */
export const Buckets = {
  /** node id -> NodeRecord, renewed by each node's heartbeat */
  nodes: "warden_nodes",
  /** "p.<n>" -> PartitionRecord */
  partitions: "warden_partitions",
  /** "<type>.<encoded id>" -> actor state (JSON) */
  state: "warden_state",
  /** cluster-wide settings fixed at first start (partition count) */
  meta: "warden_meta",
} as const;

export const Subjects = {
  /** Calls to the actors of one partition, sent to the incarnation that owns it. */
  call: (incarnation: string, partition: number) => `warden.rt.call.${incarnation}.${partition}`,
  callsTo: (incarnation: string) => `warden.rt.call.${incarnation}.>`,
  /** Asks whether an incarnation still listens for calls: no responders means it is gone (an empty probe is answered BAD_CALL). */
  probe: (incarnation: string) => `warden.rt.call.${incarnation}.probe`,
  audit: (category: string, level: string) => `warden.audit.${category}.${level}`,
  trace: (door: string, flow: string) => `warden.trace.${door}.${flow}`,
} as const;

export const Streams = {
  audit: { name: "WARDEN_AUDIT", subjects: ["warden.audit.>"] },
  trace: { name: "WARDEN_TRACE", subjects: ["warden.trace.>"] },
} as const;

/**
 * 32-bit FNV-1a over UTF-16 code units, finished with murmur3's fmix32 so that near-identical
 * inputs ("node-1#3", "node-1#4") spread evenly. Stable across nodes and versions; cheap.
 */
export function hash32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

export function partitionOf(type: string, id: string, partitions: number): number {
  return hash32(`${type}\u0000${id}`) % partitions;
}

export function partitionKey(partition: number): string {
  return `p.${partition}`;
}

/**
 * Rendezvous (highest random weight) hashing: every node computes the same owner from the same
 * live set, and a join or leave moves only the partitions that must move.
 */
export function desiredOwner(partition: number, liveNodeIds: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const nodeId of liveNodeIds) {
    const weight = hash32(`${nodeId}#${partition}`);
    if (weight > bestWeight || (weight === bestWeight && best !== undefined && nodeId < best)) {
      best = nodeId;
      bestWeight = weight;
    }
  }
  return best;
}

const plainId = /^[A-Za-z0-9_-]{1,200}$/;

/**
 * KV keys allow only [-/_=.A-Za-z0-9]. Plain ids are kept readable; anything else becomes
 * '=' + base64url, which no plain id can start with, so the mapping is one-to-one.
 */
export function encodeId(id: string): string {
  return plainId.test(id) ? id : `=${Buffer.from(id, "utf8").toString("base64url")}`;
}

export function decodeId(encoded: string): string {
  return encoded.startsWith("=") ? Buffer.from(encoded.slice(1), "base64url").toString("utf8") : encoded;
}

export function stateKey(type: string, id: string): string {
  return `${type}.${encodeId(id)}`;
}

export function addressOfStateKey(key: string): { type: string; id: string } {
  const dot = key.indexOf(".");
  return { type: key.slice(0, dot), id: decodeId(key.slice(dot + 1)) };
}
