import { needs } from "./route-permissions";
import { permits } from "../auth/authorization";
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { GuardianRights, PolicyConfig } from "../policy/model";
import {
  consentedPurposeSchema,
  contractualPurposeSchema,
  guardianSchema,
  overrideSchema,
  platformSharingPurposeSchema,
  platformUsePurposeSchema,
  categorySchema,
  policyConfigSchema,
  userAccessSchema,
} from "../policy/schema";
import { findItem, type ItemKind, type SectionWrite } from "../policy/sections";
import { HttpError } from "../http/errors";
import { requester } from "./requester";
import { historyQuery, ifMatchHeader, listSectionBody, revisionParams, stableIdParams } from "./requests/config-requests";
import { configAnswer, guardianAnswer, historyAnswer, revisionAnswer, sectionAnswer, userAccessAnswer, writeResultSchema } from "./answers/config-answers";
import type { ConfigWriteResult, PolicyPort } from "../api/types";

/** A list section of the configuration: its path, the key of its body, its item schema, how to read and write it. */
interface ListSection {
  path: string;
  bodyKey: string;
  itemSchema: object;
  kind: ItemKind;
  read: (config: PolicyConfig) => unknown[];
  write: (items: never[]) => SectionWrite;
  summary: string;
}

const listSections: ListSection[] = [
  {
    path: "categories",
    bodyKey: "categories",
    itemSchema: categorySchema,
    kind: "category",
    read: (c) => c.categories,
    write: (items) => ({ section: "categories", items }),
    summary: "categories and their fields",
  },
  {
    path: "platform-use",
    bodyKey: "purposes",
    itemSchema: platformUsePurposeSchema,
    kind: "platformUsePurpose",
    read: (c) => c.platformUse.purposes,
    write: (items) => ({ section: "platformUse", items }),
    summary: "platform use purposes",
  },
  {
    path: "platform-use/overrides",
    bodyKey: "overrides",
    itemSchema: overrideSchema,
    kind: "platformUseOverride",
    read: (c) => c.platformUse.overrides,
    write: (items) => ({ section: "platformUseOverrides", items }),
    summary: "overrides of platform use (and contractual) purposes",
  },
  {
    path: "platform-sharing",
    bodyKey: "purposes",
    itemSchema: platformSharingPurposeSchema,
    kind: "platformSharingPurpose",
    read: (c) => c.platformSharing.purposes,
    write: (items) => ({ section: "platformSharing", items }),
    summary: "platform sharing purposes with their third parties",
  },
  {
    path: "platform-sharing/overrides",
    bodyKey: "overrides",
    itemSchema: overrideSchema,
    kind: "platformSharingOverride",
    read: (c) => c.platformSharing.overrides,
    write: (items) => ({ section: "platformSharingOverrides", items }),
    summary: "overrides of platform sharing purposes",
  },
  {
    path: "contractual-exchange",
    bodyKey: "purposes",
    itemSchema: contractualPurposeSchema,
    kind: "contractualPurpose",
    read: (c) => c.contractualExchange.purposes,
    write: (items) => ({ section: "contractualExchange", items }),
    summary: "contractual exchange purposes and their terms",
  },
  {
    path: "consented-sharing",
    bodyKey: "purposes",
    itemSchema: consentedPurposeSchema,
    kind: "consentedPurpose",
    read: (c) => c.consentedSharing.purposes,
    write: (items) => ({ section: "consentedSharing", items }),
    summary: "consented sharing purposes and their terms",
  },
];

/** Overrides merge by replacing the whole list; every other list is upserted by stableId. */
const replacesWholeList = (section: ListSection) => section.path.endsWith("overrides");

/** `If-Match: "5"`, `W/"5"`, `5` or `*` (any); anything else is a bad request. */
export function expectedRevisionOf(request: FastifyRequest): number | undefined {
  const header = request.headers["if-match"];
  if (header === undefined || header.trim() === "*") return undefined;
  const match = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(header);
  if (!match) throw new HttpError("ERR_REQUEST_INVALID", `If-Match must name a configuration revision, like "5" (got ${JSON.stringify(header)})`);
  return Number(match[1]);
}

export function withRevision(reply: FastifyReply, revision: number): FastifyReply {
  return reply.header("etag", `"${revision}"`).header("x-config-revision", String(revision));
}

export function answerWrite(reply: FastifyReply, result: ConfigWriteResult): FastifyReply {
  return withRevision(reply, result.revision).send(result);
}

function registerListSection(app: FastifyInstance, port: PolicyPort, section: ListSection): void {
  const tags = ["config"];
  app.put<{ Body: Record<string, never[]> }>(
    `/config/${section.path}`,
    {
      schema: {
        tags,
        summary: `Create or update ${section.summary}`,
        description: replacesWholeList(section)
          ? `Replaces the whole list of ${section.summary}.`
          : `Each item creates or replaces the item with the same stableId; items not given stay. Delete with DELETE /config/${section.path}/{id}.`,
        headers: ifMatchHeader,
        body: listSectionBody(section.bodyKey, section.itemSchema),
        response: { 200: writeResultSchema },
      },
    },
    async (request, reply) => {
      const items = request.body[section.bodyKey];
      return answerWrite(reply, await port.write(section.write(items), requester(request), expectedRevisionOf(request)));
    },
  );
  app.get(
    `/config/${section.path}`,
    { schema: { tags, summary: `Read ${section.summary}`, response: { 200: sectionAnswer(section.bodyKey, section.itemSchema) } } },
    async (_request, reply) => {
      const { revision, config } = await port.read();
      return withRevision(reply, revision).send({ [section.bodyKey]: section.read(config) });
    },
  );
  app.get<{ Params: { id: string } }>(
    `/config/${section.path}/:id`,
    { schema: { tags, summary: `Read one of the ${section.summary} by stableId`, params: stableIdParams, response: { 200: section.itemSchema } } },
    async (request, reply) => {
      const { id } = request.params;
      const { revision, config } = await port.read();
      const item = findItem(config, section.kind, id);
      if (item === undefined) throw new HttpError("ERR_RESOURCE_NOT_FOUND", `no ${section.kind} '${id}'`);
      return withRevision(reply, revision).send(item);
    },
  );
  app.delete<{ Params: { id: string } }>(
    `/config/${section.path}/:id`,
    {
      schema: {
        tags,
        summary: `Delete one of the ${section.summary} (refused with 409 while anything refers to it)`,
        params: stableIdParams,
        headers: ifMatchHeader,
        response: { 200: writeResultSchema },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      return answerWrite(reply, await port.remove(section.kind, id, requester(request), expectedRevisionOf(request)));
    },
  );
}

/** /config: the whole configuration, each section, single items, and the revision history (spec 4.2). */
export function configRoutes(port: PolicyPort): FastifyPluginAsync {
  return async (app) => {
    const tags = ["config"];
    app.get(
      "/config",
      { schema: { tags, summary: "Read the complete configuration (mapping groups included); the revision is in the ETag", response: { 200: configAnswer } } },
      async (_request, reply) => {
        const { revision, config } = await port.read();
        return withRevision(reply, revision).send(config);
      },
    );
    app.put(
      "/config",
      {
        // Replacing everything at once is config:admin; item writes are config:write.
        config: needs({ component: "config", action: "admin" }),
        bodyLimit: 8 * 1024 * 1024,
        schema: {
          tags,
          summary: "Replace the complete configuration, whole or not at all; PUT of what GET returned changes nothing",
          headers: ifMatchHeader,
          body: policyConfigSchema,
          response: { 200: writeResultSchema },
        },
      },
      // Mapping groups are part of the whole configuration: changing them also needs mapping:write (docs/authorization.md).
      async (request, reply) =>
        answerWrite(reply, await port.replace(request.body, requester(request), expectedRevisionOf(request), !permits(request.rights, "mapping", "write"))),
    );

    for (const section of listSections) registerListSection(app, port, section);

    app.put<{ Body: { categoryIds: string[] } }>(
      "/config/user-access",
      {
        schema: {
          tags,
          summary: "Set the categories on which users have core rights",
          headers: ifMatchHeader,
          body: userAccessSchema,
          response: { 200: writeResultSchema },
        },
      },
      async (request, reply) =>
        answerWrite(reply, await port.write({ section: "userAccess", categoryIds: request.body.categoryIds }, requester(request), expectedRevisionOf(request))),
    );
    app.get("/config/user-access", { schema: { tags, summary: "Read user access", response: { 200: userAccessAnswer } } }, async (_request, reply) => {
      const { revision, config } = await port.read();
      return withRevision(reply, revision).send(config.userAccess);
    });
    app.put<{ Body: GuardianRights }>(
      "/config/user-access/guardian",
      { schema: { tags, summary: "Set guardian rights", headers: ifMatchHeader, body: guardianSchema, response: { 200: writeResultSchema } } },
      async (request, reply) =>
        answerWrite(reply, await port.write({ section: "guardian", guardian: request.body }, requester(request), expectedRevisionOf(request))),
    );
    app.get(
      "/config/user-access/guardian",
      { schema: { tags, summary: "Read guardian rights (404 until configured)", response: { 200: guardianAnswer } } },
      async (_request, reply) => {
        const { revision, config } = await port.read();
        if (!config.guardian) throw new HttpError("ERR_RESOURCE_NOT_FOUND", "guardian rights are not configured");
        return withRevision(reply, revision).send(config.guardian);
      },
    );

    app.get<{ Querystring: { before?: string; limit?: string } }>(
      "/config/history",
      {
        schema: {
          tags,
          summary: "The revision history, newest first: who changed what, when",
          querystring: historyQuery,
          response: { 200: historyAnswer },
        },
      },
      async (request) => {
        const query = request.query;
        const before = query.before === undefined ? undefined : Number(query.before);
        const limit = Number(query.limit ?? 50);
        const { revision } = await port.read();
        const newest = Math.min(revision, (before ?? revision + 1) - 1);
        const oldest = Math.max(1, newest - limit + 1);
        const records = newest < oldest ? [] : await port.history(oldest, newest - oldest + 1);
        return { revisions: records.reverse() };
      },
    );
    app.get<{ Params: { revision: string } }>(
      "/config/history/:revision",
      {
        schema: {
          tags,
          summary: "One revision as it was written, with the complete configuration",
          params: revisionParams,
          response: { 200: revisionAnswer },
        },
      },
      async (request) => {
        const wanted = Number(request.params.revision);
        // A record above the current revision is left over from a write that failed to commit.
        const record = wanted <= (await port.read()).revision ? await port.revision(wanted) : null;
        if (!record) throw new HttpError("ERR_RESOURCE_NOT_FOUND", "no such revision");
        return record;
      },
    );
  };
}
