import type { FastifyPluginAsync, FastifyReply, FastifyRequest, FastifySchema } from "fastify";
import type { MappingGroup } from "../policy/model";
import { mappingGroupSchema } from "../policy/schema";
import { findItem, type SectionWrite } from "../policy/sections";
import { answerWrite, expectedRevisionOf, withRevision } from "./config-routes";
import { HttpError } from "../http/errors";
import { requester } from "./requester";
import { nameParams } from "./requests/mapping-requests";
import { mappingGroupAnswer, mappingGroupsAnswer, writeResultSchema } from "./answers/config-answers";
import type { PolicyPort } from "../api/types";

/** /mapping/groups: mapping groups tie category fields to record fields (spec 2.9, 4.3). */
export function mappingRoutes(port: PolicyPort): FastifyPluginAsync {
  return async (app) => {
    const tags = ["mapping"];
    const put = async (request: FastifyRequest<{ Body: MappingGroup }>, reply: FastifyReply) => {
      const write: SectionWrite = { section: "mappingGroup", group: request.body };
      return answerWrite(reply, await port.write(write, requester(request), expectedRevisionOf(request)));
    };
    const putSchema: FastifySchema = {
      tags,
      summary: "Create a mapping group, or redefine the group of the same name",
      body: mappingGroupSchema,
      response: { 200: writeResultSchema },
    };
    app.put("/mapping/groups/", { schema: putSchema }, put);
    app.put("/mapping/groups", { schema: { ...putSchema, hide: true } }, put);
    app.get("/mapping/groups", { schema: { tags, summary: "Read every mapping group", response: { 200: mappingGroupsAnswer } } }, async (_request, reply) => {
      const { revision, config } = await port.read();
      return withRevision(reply, revision).send({ groups: config.mappingGroups });
    });
    app.get<{ Params: { name: string } }>(
      "/mapping/groups/:name",
      { schema: { tags, summary: "Read one mapping group", params: nameParams, response: { 200: mappingGroupAnswer } } },
      async (request, reply) => {
        const { name } = request.params;
        const { revision, config } = await port.read();
        const group = findItem(config, "mappingGroup", name);
        if (!group) throw new HttpError("ERR_RESOURCE_NOT_FOUND", `no mapping group '${name}'`);
        return withRevision(reply, revision).send(group);
      },
    );
    app.delete<{ Params: { name: string } }>(
      "/mapping/groups/:name",
      { schema: { tags, summary: "Delete a mapping group", params: nameParams, response: { 200: writeResultSchema } } },
      async (request, reply) => {
        return answerWrite(reply, await port.remove("mappingGroup", request.params.name, requester(request), expectedRevisionOf(request)));
      },
    );
  };
}
