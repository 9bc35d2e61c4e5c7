import { passesWhole, type ResultShape, type StatementEffect } from "../analysis/statement-analysis";

/**
 * What the client's named objects return: prepared statements (Parse and PREPARE share one
 * namespace), portals and cursors, so the rows of an Execute, EXECUTE or FETCH are read with
 * the shape their statement was analysed to have.
 *
 * A catalog read's or pushdown statement's rows pass whole, so its shape is trusted only while the backend's object is
 * surely the statement the proxy analysed. Server-side code (a function, a DO block) can
 * DEALLOCATE and PREPARE, or CLOSE and DECLARE, under the same name: once any statement that may
 * run such code has been sent (anything but catalog reads and transaction or setting control),
 * named catalog reads made before it are decided row by row (none of their rows names a user).
 * The unnamed statement and portal cannot be made by SQL, so they stay trusted.
 *
 * A pushdown statement's rows are allowed data only under the verdicts it was made with: its
 * guard is the verdict version of its Parse (or PREPARE, or DECLARE), and a transaction's snapshot
 * (REPEATABLE READ, a cursor's, a portal's) keeps reading the verdict table as it was. So a named
 * pushdown result, the unnamed one too, is trusted only while the verdict version it was made
 * under is still the session's: after a user's change its rows are decided row by row (none
 * names a user): prepare it again.
 */
export class NamedResults {
  /** Portals by name, with what their statement returns. */
  private readonly portals = new Map<string, Named>();
  /** Prepared statements by name, with what they return. */
  private readonly statements = new Map<string, Named>();
  /** Cursors (DECLARE) by name, with what they return. */
  private readonly cursors = new Map<string, { shape: ResultShape | undefined; epoch: number; version: number }>();
  /** Counts the statements sent that may have run server-side code. */
  private epoch = 0;
  /** DECLAREs and PREPAREs sent and not yet completed, with the epoch when each was sent (they complete in this order, or fail). */
  private readonly making: Array<{ effect: StatementEffect; epoch: number; version: number }> = [];
  /** Pushdown: the verdict version the session's statements are sent under now (client-pump.ts sets it before each Query, Parse and Execute). */
  verdictVersion = 0;

  /** A statement was sent: if it may run server-side code, named catalog reads made before now are no longer trusted. */
  sent(effect: StatementEffect | undefined): void {
    if (!effect) return;
    if (effect.kind === "declare" || effect.kind === "prepare") this.making.push({ effect, epoch: this.epoch, version: this.verdictVersion });
    if (!this.mayRunCode(effect)) return;
    this.epoch++;
  }

  /**
   * The backend answered an error: a Parse or Bind recorded before it may not have happened (a
   * name already taken is refused, and the statement or cursor of that name stays, perhaps one
   * server-side code made), so named catalog reads recorded before now are no longer trusted.
   * Messages after the error, until Sync, the backend skips and the proxy does not record.
   */
  failed(): void {
    this.epoch++;
  }

  statement(name: string): StatementEffect | undefined {
    return this.trusted(this.statements.get(name), name);
  }

  portal(name: string): StatementEffect | undefined {
    return this.trusted(this.portals.get(name), name);
  }

  /** A Parse (or PREPARE) under `name`. */
  setStatement(name: string, effect: StatementEffect): void {
    this.statements.set(name, { effect, epoch: this.epoch, version: this.verdictVersion });
  }

  /** A Bind of `portal`: what the statement returns, as trusted now, under its statement's verdict version. */
  setPortal(name: string, effect: StatementEffect, statement: string): void {
    this.portals.set(name, { effect, epoch: this.epoch, version: this.statements.get(statement)?.version ?? -1 });
  }

  closeStatement(name: string): void {
    this.statements.delete(name);
  }

  closePortal(name: string): void {
    this.portals.delete(name);
  }

  /** What a statement's or portal's rows look like: a cursor's or prepared statement's as declared. */
  shapeOf(effect: StatementEffect): ResultShape | undefined {
    switch (effect.kind) {
      case "rows":
        return effect.shape;
      case "fetch": {
        const cursor = this.cursors.get(effect.cursor);
        return passesWhole(cursor?.shape) && (cursor!.epoch !== this.epoch || !this.underCurrentVerdicts(cursor!)) ? undefined : cursor?.shape;
      }
      case "execute": {
        const prepared = this.statement(effect.name);
        return prepared?.kind === "rows" ? prepared.shape : undefined;
      }
      default:
        return undefined;
    }
  }

  /** A statement completed: cursors and SQL-level prepared statements it made or removed. */
  applyEffect(effect: StatementEffect | undefined): void {
    switch (effect?.kind) {
      case "declare":
        this.cursors.set(effect.cursor, { shape: effect.shape, ...this.sentAt(effect) });
        return;
      case "prepare":
        this.statements.set(effect.name, { effect: { kind: "rows", shape: effect.shape }, ...this.sentAt(effect) });
        return;
      case "close":
        if (effect.cursor === undefined) this.cursors.clear();
        else this.cursors.delete(effect.cursor);
        return;
      case "deallocate":
        if (effect.name === undefined) this.statements.clear();
        else this.statements.delete(effect.name);
        return;
      case "discard":
        this.statements.clear();
        this.cursors.clear();
        return;
      default:
        return;
    }
  }

  private mayRunCode(effect: StatementEffect): boolean {
    switch (effect.kind) {
      case "control":
      case "close":
      case "deallocate":
      case "discard":
        return false;
      case "declare":
      case "prepare":
        return !passesWhole(effect.shape);
      default:
        return !passesWhole(this.shapeOf(effect));
    }
  }

  /** The epoch and verdict version when a completing DECLARE or PREPARE was sent (those sent before it that failed are passed over); -1: unknown, never trusted. */
  private sentAt(effect: StatementEffect): { epoch: number; version: number } {
    while (this.making.length > 0) {
      const made = this.making.shift()!;
      if (made.effect === effect) return { epoch: made.epoch, version: made.version };
    }
    return { epoch: -1, version: -1 };
  }

  /** A pushdown result made under the session's current verdicts (see the class); other shapes carry no verdicts. */
  private underCurrentVerdicts(named: { shape?: ResultShape; version: number }): boolean {
    return named.shape?.pushdown !== true || named.version === this.verdictVersion;
  }

  /** A named object's effect; a catalog read's only while nothing could have replaced it (see the class). */
  private trusted(named: Named | undefined, name: string): StatementEffect | undefined {
    if (!named) return undefined;
    const { effect } = named;
    if (effect.kind !== "rows" || !passesWhole(effect.shape)) return effect;
    if ((name === "" || named.epoch === this.epoch) && this.underCurrentVerdicts({ shape: effect.shape, version: named.version })) return effect;
    return { kind: "rows", shape: undefined };
  }
}

interface Named {
  effect: StatementEffect;
  /** The epoch when it was made (see `sent`). */
  epoch: number;
  /** The verdict version it was made under (pushdown; see the class). */
  version: number;
}
