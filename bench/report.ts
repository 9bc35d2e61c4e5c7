/**
 * One figure of a benchmark against its target, printed as a marked JSON line: `npm run bench`
 * (bench/all.ts) collects them from every benchmark into one table. Run alone, a benchmark
 * prints it beside its own lines.
 */
export interface Figure {
  figure: string;
  /** The measured value, with its unit. */
  measured: string;
  /** What it is compared with, measured in the same run ("-" when the target is absolute). */
  baseline: string;
  /** measured / baseline where there is a baseline (for absolute targets, measured / limit). */
  ratio: number | null;
  target: string;
  /** Undefined: the figure is recorded, it has no target. */
  met?: boolean;
}

export const figureMarker = "BENCH-FIGURE ";

export function reportFigure(figure: Figure): void {
  process.stdout.write(`${figureMarker}${JSON.stringify(figure)}\n`);
}

export const reqPerSecond = (value: number): string => `${Math.round(value).toLocaleString("en")} req/s`;
