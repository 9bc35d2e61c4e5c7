import type { FastifyPluginAsync } from "fastify";
import { HttpError } from "../http/errors";
import type { RootPath } from "./types";

/** A root path whose component has not landed yet: every method answers 501 with a registered code. */
export function notImplemented(root: RootPath): FastifyPluginAsync {
  return async (app) => {
    const refuse = async () => {
      throw new HttpError("ERR_SERVICE_NOT_IMPLEMENTED", `/${root} is not implemented yet`);
    };
    app.all(`/${root}`, refuse);
    app.all(`/${root}/*`, refuse);
  };
}
