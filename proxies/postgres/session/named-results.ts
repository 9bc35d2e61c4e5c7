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
 *
 * A Parse, Bind or Close changes a name only when the backend confirms it (ParseComplete,
 * BindComplete, CloseComplete), in the backend's order, as a PREPARE or DECLARE does when it
 * completes. PostgreSQL refuses a Parse or Bind under a name already taken (42P05, 42P03) and keeps
 * the old statement or portal; a Bind refused before it replaces the unnamed portal keeps that one;
 * after an error it skips every message until Sync. Such changes are never applied. What must be
 * decided when a message is sent (the result formats of a Bind, whether an Execute may run code)
 * reads the changes sent and not yet answered (`expectedStatement`, `expectedPortal`); rows and
 * descriptions are read with what the backend confirmed, looked up when their answer comes.
 * Portals and cursors share one namespace. A transaction's end closes its portals and its cursors
 * but those WITH HOLD, and those too when it rolled back (or may have: an error, a ROLLBACK).
 */
export class NamedResults {
  /** Portals by name, with what their statement returns (as the backend confirmed them). */
  private readonly portals = new Names<Named>();
  /** Prepared statements by name, with what they return (as the backend confirmed them). */
  private readonly statements = new Names<Named>();
  /** The last Parse or Close of a statement sent under each name and not yet answered. */
  private readonly pendingStatements = new Names<NamedChange>();
  /** The last Bind or Close of a portal sent under each name and not yet answered. */
  private readonly pendingPortals = new Names<NamedChange>();
  /** Cursors (DECLARE) by name, with what they return. */
  private readonly cursors = new Map<string, Cursor>();
  /** Since the last transaction ended: an error or a ROLLBACK (its cursors WITH HOLD do not outlive it). */
  private rollingBack = false;
  /** Counts the statements sent that may have run server-side code. */
  private epoch = 0;
  /** DECLAREs and PREPAREs sent and not yet completed, with the epoch when each was sent (they complete in this order, or fail). */
  private readonly making: Array<{ effect: StatementEffect; epoch: number; version: number }> = [];
  /** Pushdown: the verdict version the session's statements are sent under now (client-pump.ts sets it before each Query, Parse and Execute). */
  verdictVersion = 0;

  /** A statement was sent (undefined: an Execute of a portal the proxy does not know): if it may run server-side code, named catalog reads made before now are no longer trusted. */
  sent(effect: StatementEffect | undefined): void {
    if (!effect) {
      this.epoch++;
      return;
    }
    if (effect.kind === "declare" || effect.kind === "prepare") this.making.push({ effect, epoch: this.epoch, version: this.verdictVersion });
    if (!this.mayRunCode(effect)) return;
    this.epoch++;
  }

  /**
   * The backend answered an error: a Parse or Bind sent before it may have been refused (a name
   * already taken is refused, and the statement or portal of that name stays, perhaps one
   * server-side code made), and an Execute sent meanwhile was judged by what it would have made
   * (`expectedPortal`), so it may have run code unseen: named catalog reads made before now are no
   * longer trusted. Messages after the error, until Sync, the backend skips and the proxy does not record.
   */
  failed(): void {
    this.epoch++;
    this.rollingBack = true;
  }

  /** A ROLLBACK completed (its command tag; ROLLBACK TO SAVEPOINT's too): the transaction's cursors WITH HOLD will not outlive it. */
  rolledBack(): void {
    this.rollingBack = true;
  }

  /** What the statement `name` returns, as the backend confirmed it. */
  statement(name: string): StatementEffect | undefined {
    return this.trusted(this.statements.get(name), name);
  }

  /** What the portal `name` returns, as the backend confirmed it. */
  portal(name: string): StatementEffect | undefined {
    return this.trusted(this.portals.get(name), name);
  }

  /** What the statement `name` will return once everything sent so far is answered, if nothing is refused (for what must be decided when a message is sent). */
  expectedStatement(name: string): StatementEffect | undefined {
    const pending = this.pendingStatements.get(name);
    return pending ? this.trusted(pending.closes ? undefined : pending, name) : this.statement(name);
  }

  /** What the portal `name` will return once everything sent so far is answered, if nothing is refused. */
  expectedPortal(name: string): StatementEffect | undefined {
    const pending = this.pendingPortals.get(name);
    return pending ? this.trusted(pending.closes ? undefined : pending, name) : this.portal(name);
  }

  /** A Parse under `name` was sent: the change to apply when the backend confirms it. */
  parse(name: string, effect: StatementEffect): NamedChange {
    const change: NamedChange = { portal: false, name, closes: false, effect, epoch: this.epoch, version: this.verdictVersion };
    this.pendingStatements.set(name, change);
    return change;
  }

  /** A Bind of portal `name` to `statement` was sent: the change to apply when the backend confirms it. */
  bind(name: string, statement: string): NamedChange {
    // The statement as expected (see `expectedStatement`).
    const pending = this.pendingStatements.get(statement);
    const made = pending ? (pending.closes ? undefined : pending) : this.statements.get(statement);
    const effect = this.trusted(made, statement) ?? other;
    const change: NamedChange = { portal: true, name, closes: false, effect, epoch: this.epoch, version: made?.version ?? -1, statement };
    this.pendingPortals.set(name, change);
    return change;
  }

  /** A Close of a statement or portal was sent: the change to apply when the backend confirms it. */
  close(portal: boolean, name: string): NamedChange {
    const change: NamedChange = { portal, name, closes: true, effect: other, epoch: -1, version: -1 };
    (portal ? this.pendingPortals : this.pendingStatements).set(name, change);
    return change;
  }

  /** The backend confirmed a change (ParseComplete, BindComplete, CloseComplete): the name is what it made. */
  confirmed(change: NamedChange): void {
    const { name } = change;
    if (!change.portal) {
      if (change.closes) this.statements.delete(name);
      else this.statements.set(name, change);
    } else {
      if (change.closes) this.portals.delete(name);
      else {
        // A Bind's portal returns what its statement does now, as the backend has it (the Parses before it answered); made when the Bind was sent.
        const statement = this.statements.get(change.statement!);
        change.effect = this.trusted(statement, change.statement!) ?? other;
        change.version = statement?.version ?? -1;
        this.portals.set(name, change);
      }
      // Portals and cursors share a namespace: a cursor of this name is gone.
      if (this.cursors.size > 0) this.cursors.delete(name);
    }
    this.settled(change);
  }

  /** A change the backend refused or skipped (an error, then everything until Sync): the name stays as it was. */
  dropped(change: NamedChange): void {
    this.settled(change);
  }

  /**
   * The transaction ended (ReadyForQuery, idle): its portals, the unnamed one too, are gone, and its
   * cursors but those WITH HOLD; those made in it too when it rolled back or may have.
   */
  transactionEnded(): void {
    this.portals.clear();
    if (this.cursors.size > 0)
      for (const [name, cursor] of this.cursors) {
        if (!cursor.hold || (cursor.fresh && this.rollingBack)) this.cursors.delete(name);
        else cursor.fresh = false;
      }
    this.rollingBack = false;
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
        this.cursors.set(effect.cursor, { shape: effect.shape, ...this.sentAt(effect), hold: effect.hold, fresh: true });
        // Portals and cursors share a namespace: a portal of this name is gone.
        this.portals.delete(effect.cursor);
        return;
      case "prepare":
        this.statements.set(effect.name, { effect: { kind: "rows", shape: effect.shape }, ...this.sentAt(effect) });
        return;
      case "close":
        // CLOSE closes portals the extended protocol made too.
        if (effect.cursor === undefined) {
          this.cursors.clear();
          this.portals.clear();
        } else {
          this.cursors.delete(effect.cursor);
          this.portals.delete(effect.cursor);
        }
        return;
      case "deallocate":
        if (effect.name === undefined) this.statements.clear();
        else this.statements.delete(effect.name);
        return;
      case "discard":
        this.statements.clear();
        this.cursors.clear();
        this.portals.clear();
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
      case "execute": {
        // The statement the backend will run: Parses and Closes sent before count.
        const prepared = this.expectedStatement(effect.name);
        return !passesWhole(prepared?.kind === "rows" ? prepared.shape : undefined);
      }
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

  /** A change answered (confirmed or not): what was sent later under its name, if anything, is still expected. */
  private settled(change: NamedChange): void {
    const pending = change.portal ? this.pendingPortals : this.pendingStatements;
    if (pending.get(change.name) === change) pending.delete(change.name);
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

/** What a statement or portal returns when the proxy knows no more. */
const other: StatementEffect = { kind: "other" };

/**
 * A Parse, Bind or Close sent, applied only when the backend confirms it (see the class). A Parse's
 * or Bind's is then the name's record itself: what it returns (a Bind's as expected when sent, its
 * statement read again when confirmed), the epoch and verdict version.
 */
export interface NamedChange extends Named {
  /** A Bind's or a Close of a portal: the portal namespace; otherwise the statements'. */
  portal: boolean;
  name: string;
  /** A Close: the name is removed. */
  closes: boolean;
  /** A Bind's statement. */
  statement?: string;
}

/**
 * Named objects by name: the unnamed one (most clients' every statement) in a field, the others in
 * a map, so replacing and clearing the unnamed one each transaction costs no map operations.
 */
class Names<T> {
  private unnamed: T | undefined;
  private readonly named = new Map<string, T>();

  get(name: string): T | undefined {
    return name === "" ? this.unnamed : this.named.get(name);
  }

  set(name: string, value: T): void {
    if (name === "") this.unnamed = value;
    else this.named.set(name, value);
  }

  delete(name: string): void {
    if (name === "") this.unnamed = undefined;
    else this.named.delete(name);
  }

  clear(): void {
    this.unnamed = undefined;
    if (this.named.size > 0) this.named.clear();
  }
}

interface Cursor {
  shape: ResultShape | undefined;
  /** The epoch and verdict version when its DECLARE was sent. */
  epoch: number;
  version: number;
  /** WITH HOLD: it outlives its transaction if that commits. */
  hold: boolean;
  /** Made in the transaction under way. */
  fresh: boolean;
}

interface Named {
  effect: StatementEffect;
  /** The epoch when it was made (see `sent`). */
  epoch: number;
  /** The verdict version it was made under (pushdown; see the class). */
  version: number;
}
