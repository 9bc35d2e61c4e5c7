import { HandlerError } from "../actors/runtime/errors";
import type { ExportBody } from "../api/types";

/** The fields of PUT /export an export type takes; every other one is refused (`refuseFieldsNotTaken`). */
export type TakenFields = ReadonlySet<keyof ExportBody>;

/** What every export type takes: its type, listen port, mapping group and purpose. */
const everyType = ["type", "port", "resolverGroup", "metadata"] as const;

/** The fields a type takes: those every type takes, and its own. */
export function takenFields(...own: Array<keyof ExportBody>): TakenFields {
  return new Set([...everyType, ...own]);
}

/** Why a type refuses a field, where it is worth more than "does not apply". */
export type RefusalReasons = Readonly<Partial<Record<keyof ExportBody, string>>>;

/** A field the export type does not take: refused with why, rather than stored and ignored. */
export function refuseField(type: string, path: string, why: string): never {
  throw new HandlerError("EXPORT_INVALID", `${why}: leave ${path} out`, { details: [{ path, problem: `not taken by ${type} exports` }] });
}

/**
 * Refuses every field of the body but the ones a type takes (`reasons`: why, where it is worth
 * saying): a field added for another type later is refused, not stored and ignored.
 */
export function refuseFieldsNotTaken(type: string, body: object, taken: ReadonlySet<string>, reasons: Readonly<Record<string, string | undefined>> = {}): void {
  for (const [field, value] of Object.entries(body))
    if (value !== undefined && !taken.has(field)) refuseField(type, field, reasons[field] ?? `${field} does not apply to a ${type} export`);
}
