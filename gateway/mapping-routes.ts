import type { FastifyPluginAsync, FastifyReply, FastifyRequest, FastifySchema } from "fastify";
import { mappingGroupSchema } from "../policy/schema";
import { findItem, type SectionWrite } from "../policy/sections";
import { answerWrite, expectedRevisionOf, withRevision } from "./config-routes";
import { HttpError } from "../http/errors";
import { requester } from "./requester";
import type { PolicyPort } from "../api/types";

const nameParams = { type: "object", properties: { name: { type: "string", minLength: 1, maxLength: 200 } }, required: ["name"] } as const;

/** /mapping/groups: mapping groups tie category fields to record fields (spec 2.9, 4.3). */
export function mappingRoutes(port: PolicyPort): FastifyPluginAsync {
  return async (app) => {
    const tags = ["mapping"];
    const put = async (request: FastifyRequest, reply: FastifyReply) => {
      const write: SectionWrite = { section: "mappingGroup", group: request.body as never };
      return answerWrite(reply, await port.write(write, requester(request), expectedRevisionOf(request)));
    };
    const putSchema: FastifySchema = { tags, summary: "Create a mapping group, or redefine the group of the same name", body: mappingGroupSchema };
    app.put("/mapping/groups/", { schema: putSchema }, put);
    app.put("/mapping/groups", { schema: { ...putSchema, hide: true } }, put);
    app.get("/mapping/groups", { schema: { tags, summary: "Read every mapping group" } }, async (_request, reply) => {
      const { revision, config } = await port.read();
      return withRevision(reply, revision).send({ groups: config.mappingGroups });
    });
    app.get("/mapping/groups/:name", { schema: { tags, summary: "Read one mapping group", params: nameParams } }, async (request, reply) => {
      const { name } = request.params as { name: string };
      const { revision, config } = await port.read();
      const group = findItem(config, "mappingGroup", name);
      if (!group) throw new HttpError("ERR_RESOURCE_NOT_FOUND", `no mapping group '${name}'`);
      return withRevision(reply, revision).send(group);
    });
    app.delete("/mapping/groups/:name", { schema: { tags, summary: "Delete a mapping group", params: nameParams } }, async (request, reply) => {
      return answerWrite(reply, await port.remove("mappingGroup", (request.params as { name: string }).name, requester(request), expectedRevisionOf(request)));
    });
  };
}
