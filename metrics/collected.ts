import { Counter, Gauge, type Registry } from "prom-client";

type Reader<L extends string> = (set: (labels: Record<L, string>, value: number) => void) => void;

/** A metric whose values are read at scrape time from a tally the counting code keeps: a counter (the tally only grows) or a gauge. */
function collected<L extends string>(
  kind: "counter" | "gauge",
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  read: Reader<L>,
): void {
  const config = { name, help, labelNames, registers: [registry] };
  if (kind === "counter") {
    new Counter<L>({
      ...config,
      collect() {
        this.reset();
        read((labels, value) => this.inc(labels, value));
      },
    });
  } else {
    new Gauge<L>({
      ...config,
      collect() {
        this.reset();
        read((labels, value) => this.set(labels, value));
      },
    });
  }
}

export const collectedCounter = <L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[], read: Reader<L>): void =>
  collected("counter", registry, name, help, labelNames, read);
export const collectedGauge = <L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[], read: Reader<L>): void =>
  collected("gauge", registry, name, help, labelNames, read);
