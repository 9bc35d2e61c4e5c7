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
  const node = await startServiceNode(config, logger);
  let signals = 0;
  const shutdown = (signal: NodeJS.Signals) => {
    if (++signals > 1) {
      logger.warn({ signal }, "second signal: exiting without a clean hand-over");
      process.exit(1);
    }
    logger.info({ signal }, "stopping: draining in-flight calls and handing actors over");
    node.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "clean stop failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

main().catch((error: unknown) => {
  if (error instanceof StartupError) {
    process.stderr.write(`warden: ${error.message}\n`);
  } else {
    process.stderr.write(`warden: could not start: ${(error as Error)?.message ?? String(error)}\n`);
  }
  process.exit(1);
});
