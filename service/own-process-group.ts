import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { findExecutable } from "./find-executable";

/**
 * Starts a program in a process group of its own, in this process's session: Ctrl-C at a
 * terminal (SIGINT to the foreground group) does not reach it.
 *
 * Node offers only `detached`, which calls setsid(): a new session, and on Linux with
 * sched_autogroup (Debian's default) a scheduling group of its own. The embedded nats-server
 * then competed with the node as a separate group, and every pipeline record cost the node
 * about 14 µs more CPU (bench/RESULTS.md, pipeline stream). setpgrp() alone has no such cost;
 * perl (perl-base is essential on Debian) calls it and execs the program, keeping its pid.
 * Without perl, a session of its own is the fallback: slower, but Ctrl-C still does not reach it.
 */
export function spawnInOwnProcessGroup(command: string, args: readonly string[], options: Omit<SpawnOptions, "detached">): ChildProcess {
  const perl = findExecutable("perl", options.env ?? process.env);
  if (!perl) return spawn(command, args, { ...options, detached: true });
  return spawn(perl, ["-e", "setpgrp(0, 0); exec { $ARGV[0] } @ARGV or die qq(cannot run $ARGV[0]: $!\\n)", "--", command, ...args], options);
}
