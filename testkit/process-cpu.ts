import { readFileSync } from "node:fs";

/** CPU seconds (user and system, every thread) a process has used so far (Linux /proc, clock ticks of 1/100 s). */
export function processCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
