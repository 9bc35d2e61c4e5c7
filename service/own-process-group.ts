import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { findExecutable } from "./find-executable";

/**
 * Starts a program in a process group of its own, in this process's session: Ctrl-C at a
 * terminal (SIGINT to the foreground group) does not reach it. The program gets SIGTERM when
 * this process dies (prctl PR_SET_PDEATHSIG), so a node killed with SIGKILL does not leave its
 * embedded nats-server running.
 *
 * Node offers only `detached`, which calls setsid(): a new session, and on Linux with
 * sched_autogroup (Debian's default) a scheduling group of its own. The embedded nats-server
 * then competed with the node as a separate group, and every pipeline record cost the node
 * about 14 µs more CPU (bench/RESULTS.md, pipeline stream). setpgrp() alone has no such cost;
 * perl (perl-base is essential on Debian) calls it and execs the program, keeping its pid.
 * Without perl, a session of its own is the fallback: slower, but Ctrl-C still does not reach it
 * (and the program outlives a killed node).
 */
export function spawnInOwnProcessGroup(command: string, args: readonly string[], options: Omit<SpawnOptions, "detached">): ChildProcess {
  const perl = findExecutable("perl", options.env ?? process.env);
  if (!perl) return spawn(command, args, { ...options, detached: true });
  const prctl = prctlSyscall[process.arch];
  // The death signal is set after the fork: a parent that died before it is seen as a changed parent pid.
  const dieWithParent = prctl === undefined ? "" : `syscall(${prctl}, ${prSetPdeathsig}, ${sigterm}); exit 1 if getppid() != ${process.pid};`;
  return spawn(perl, ["-e", `${dieWithParent} setpgrp(0, 0); exec { $ARGV[0] } @ARGV or die qq(cannot run $ARGV[0]: $!\\n)`, "--", command, ...args], options);
}

/** prctl(2)'s system call number per architecture (perl-base has no syscall.ph to look it up). */
const prctlSyscall: Partial<Record<NodeJS.Architecture, number>> = { x64: 157, arm64: 167, arm: 172, ia32: 172 };
const prSetPdeathsig = 1;
const sigterm = 15;
