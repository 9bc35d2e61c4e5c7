import type { FastifyPluginAsync } from "fastify";
import { GatewayError } from "./errors";
import type { RootPath } from "./types";

/** A root path whose component has not landed yet: every method answers 501 with a registered code. */
export function notImplemented(root: RootPath): FastifyPluginAsync {
  return async (app) => {
    const refuse = async () => {
      throw new GatewayError("ERR_SERVICE_NOT_IMPLEMENTED", `/${root} is not implemented yet`);
    };
    app.all(`/${root}`, refuse);
    app.all(`/${root}/*`, refuse);
  };
}
