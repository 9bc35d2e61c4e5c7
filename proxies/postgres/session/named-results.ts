import type { ResultShape, StatementEffect } from "../analysis/statement-analysis";

/**
 * What the client's named objects return: prepared statements (Parse and PREPARE share one
 * namespace), portals and cursors, so the rows of an Execute, EXECUTE or FETCH are read with
 * the shape their statement was analysed to have.
 */
export class NamedResults {
  /** Prepared statements by name, with what they return. */
  readonly statements = new Map<string, StatementEffect>();
  /** Portals by name, with what their statement returns. */
  readonly portals = new Map<string, StatementEffect>();
  /** Cursors (DECLARE) by name, with what they return. */
  private readonly cursors = new Map<string, ResultShape | undefined>();

  /** What a statement's or portal's rows look like: a cursor's or prepared statement's as declared. */
  shapeOf(effect: StatementEffect): ResultShape | undefined {
    switch (effect.kind) {
      case "rows":
        return effect.shape;
      case "fetch":
        return this.cursors.get(effect.cursor);
      case "execute": {
        const prepared = this.statements.get(effect.name);
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
        this.cursors.set(effect.cursor, effect.shape);
        return;
      case "prepare":
        this.statements.set(effect.name, { kind: "rows", shape: effect.shape });
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
}
