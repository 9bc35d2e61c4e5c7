import { readFileSync } from "node:fs";

/** A size field of a process's /proc status (Linux), in bytes. */
function statusBytes(pid: number, field: "VmHWM" | "VmRSS"): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!match) throw new Error(`no ${field} for process ${pid}`);
  return Number(match[1]) * 1024;
}

/** Peak resident set size of a process so far, in bytes (Linux: VmHWM). */
export function peakRss(pid: number): number {
  return statusBytes(pid, "VmHWM");
}

/** Resident set size of a process now, in bytes (Linux: VmRSS). */
export function currentRss(pid: number): number {
  return statusBytes(pid, "VmRSS");
}
