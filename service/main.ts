import "reflect-metadata"; // before tsyringe is loaded: it refuses to load without the polyfill
import { commandOf, loadConfig, usage } from "./config";
import { createLogger } from "./logger";
import { startServiceNode } from "./node";
import { StartupError } from "./startup-error";
import { version } from "../gateway/version";

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const command = commandOf(argv);
  if (command !== "run") {
    process.stdout.write(command === "help" ? usage() : `warden ${version}\n`);
    return;
  }
  const config = loadConfig(argv, process.env);
  const logger = createLogger(config.nodeId, config.logLevel, config.logFormat);
  let node: Awaited<ReturnType<typeof startServiceNode>> | undefined;
  let signalled: NodeJS.Signals | undefined;
  const stop = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "stopping: draining in-flight calls and handing actors over");
    node!.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "clean stop failed");
        process.exit(1);
      },
    );
  };
  const shutdown = (signal: NodeJS.Signals) => {
    if (signalled !== undefined) {
      logger.warn({ signal }, "second signal: exiting without a clean hand-over");
      process.exit(1);
    }
    signalled = signal;
    if (node) stop(signal);
  };
  // Before the start: once "node ready to serve" is logged, a signal is this handler's, never the default action (which killed
  // a node that a supervisor signalled right after reading that line, before handlers installed after the start existed).
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
  node = await startServiceNode(config, logger);
  // A signal that came during the start stops the node once it has started.
  if (signalled !== undefined) stop(signalled);
}

main().catch((error: unknown) => {
  if (error instanceof StartupError) {
    process.stderr.write(`warden: ${error.message}\n`);
  } else {
    process.stderr.write(`warden: could not start: ${(error as Error)?.message ?? String(error)}\n`);
  }
  process.exit(1);
});
