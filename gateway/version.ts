import { readFileSync } from "node:fs";
import { join } from "node:path";

/** package.json's version: `--version`, the OpenAPI document and the build-info metric all say this one. */
export const version: string = (JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8")) as { version: string }).version;
