#!/usr/bin/env node
// Writes openapi.json at the repository root from the gateway's route schemas (run after a
// build: `npm run openapi`). test/unit/openapi.test.ts fails when the file and the routes differ.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const { openApiDocument, openApiText } = require(join(root, "dist", "gateway", "openapi-document.js"));
writeFileSync(join(root, "openapi.json"), openApiText(await openApiDocument()));
process.stderr.write("openapi.json written\n");
