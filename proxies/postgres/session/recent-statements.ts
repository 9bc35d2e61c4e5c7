import type { QueryAnalysis } from "../analysis/statement-analysis";

/** Statements of the client whose names result column labels are checked against (see `RowDescriptions`). */
const keptRecentStatements = 16;

/** The client's recent statements: a column label it wrote in one of them may cross. */
export class RecentStatements {
  private readonly analyses: QueryAnalysis[] = [];
  /** Changes whenever the statements do. */
  version = 0;

  note(analysis: QueryAnalysis): void {
    if (this.analyses.includes(analysis)) return;
    if (this.analyses.length >= keptRecentStatements) this.analyses.shift();
    this.analyses.push(analysis);
    this.version++;
  }

  /** Whether the client wrote `name` in one of its recent statements. */
  wrote(name: string): boolean {
    return this.analyses.some((analysis) => analysis.identifiers().has(name));
  }
}
