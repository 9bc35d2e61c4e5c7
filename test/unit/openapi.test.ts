import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { openApiDocument, openApiText } from "../../gateway/openapi-document";
import { tempDir } from "../../testkit/temp";

const root = join(__dirname, "..", "..", "..");

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string; type?: unknown; anyOf?: unknown } }> }>;
}

test("openapi.json at the repository root is what the routes generate (run `npm run openapi` after changing a route)", async () => {
  const generated = openApiText(await openApiDocument());
  assert.equal(readFileSync(join(root, "openapi.json"), "utf8"), generated);
});

test("the OpenAPI document is valid, names its security schemes, and every operation documents its success and error answers", async () => {
  const document = await openApiDocument();
  const { default: SwaggerParser } = await import("@apidevtools/swagger-parser");
  await SwaggerParser.validate(structuredClone(document) as never);

  const components = document.components as { securitySchemes: Record<string, { type: string; scheme?: string }>; schemas: Record<string, unknown> };
  assert.deepEqual(Object.keys(components.securitySchemes).sort(), ["basicAuth", "bearerAuth", "cloudSignature"]);
  assert.equal(components.securitySchemes.basicAuth!.scheme, "basic");
  assert.equal(components.securitySchemes.bearerAuth!.scheme, "bearer");
  assert.ok(components.schemas.ErrorBody, "the error body is a component");

  const paths = document.paths as Record<string, Record<string, Operation>>;
  let operations = 0;
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      operations++;
      const statuses = Object.keys(operation.responses);
      const success = statuses.find((status) => status.startsWith("2"));
      assert.ok(success, `${method} ${path} documents its success`);
      // A typed answer (an object, array or string with its schema), not "any JSON": a client can type it.
      for (const [mediaType, { schema }] of Object.entries(operation.responses[success]!.content ?? {}))
        assert.ok(schema?.type !== undefined || schema?.$ref !== undefined || schema?.anyOf !== undefined, `${method} ${path} ${mediaType} has a typed answer`);
      for (const errors of ["4XX", "5XX"]) {
        const schema = operation.responses[errors]?.content?.["application/json"]?.schema;
        assert.equal(schema?.$ref, "#/components/schemas/ErrorBody", `${method} ${path} ${errors} is the error body`);
      }
    }
  }
  assert.ok(operations >= 40, `every route is documented (${operations})`);
});

test("openapi-typescript types generated from the document compile in a client, and catch a wrong error code", async () => {
  const document = await openApiDocument();
  const { default: openapiTS, astToString } = await import("openapi-typescript");
  const dir = tempDir("openapi-types");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "schema.ts"), astToString(await openapiTS(document as never)));
  writeFileSync(
    join(dir, "client.ts"),
    `import type { components, paths } from "./schema";
type DecisionAnswer = paths["/decision"]["put"]["responses"][200]["content"]["application/json"];
type DecisionQuery = NonNullable<paths["/decision"]["put"]["requestBody"]>["content"]["application/json"];
type ErrorBody = components["schemas"]["ErrorBody"];
export const query: DecisionQuery = { userId: "alice", type: "platformUse", purposeId: "service" };
export const answer: DecisionAnswer = { traceId: "t", userId: "alice", decidedAt: "2026-01-01T00:00:00Z", allowed: true, flow: "platform", categoryIds: ["usage"], reasons: [{ code: "ALLOWED_BY_TERMS", text: "accepted" }], summary: "Kept", revision: 1 };
type ExportList = paths["/export"]["get"]["responses"][200]["content"]["application/json"];
type UserAnswer = paths["/user/{userId}"]["get"]["responses"][200]["content"]["application/json"];
type Revision = paths["/config/history/{revision}"]["get"]["responses"][200]["content"]["application/json"];
export const exports: ExportList = { exports: [] };
export const user: UserAnswer = { userId: "alice", guardians: ["bob"] };
export const revision: Revision = { revision: 2, config: { categories: [], platformUse: { purposes: [], overrides: [] }, platformSharing: { purposes: [], overrides: [] }, contractualExchange: { purposes: [] }, consentedSharing: { purposes: [] }, userAccess: { categoryIds: [] }, guardian: null, mappingGroups: [] } };
// @ts-expect-error guardians is a list of user ids
export const wrongGuardians: UserAnswer = { userId: "alice", guardians: "bob" };
export const failure: ErrorBody = { error: { code: "ERR_REQUEST_INVALID", message: "bad" } };
// @ts-expect-error a code the registry does not have
export const unknownCode: ErrorBody = { error: { code: "ERR_NO_SUCH_CODE", message: "bad" } };
// @ts-expect-error a decision type the API does not take
export const wrongType: DecisionQuery = { userId: "alice", type: "marketing", purposeId: "service" };
`,
  );
  const program = ts.createProgram([join(dir, "client.ts")], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    skipLibCheck: false,
    types: [],
  });
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  assert.deepEqual(diagnostics, []);
});
