import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import type { FastifyPluginAsync } from "fastify";
import { policyConfigSchema } from "../policy/schema";

/** The roots that have a web UI (spec 1): each serves its page at `/<root>/` and its files under `/<root>/ui/`. */
export const uiRoots = ["config", "mapping", "redact", "user"] as const;
export type UiRoot = (typeof uiRoots)[number];

/** The `ui/` folder of the checkout: this file runs from dist/gateway. */
export const defaultUiDir = join(__dirname, "..", "..", "ui");

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

/** Sent with every UI file: nothing is loaded from another origin, nothing inline runs, no framing. */
export const uiSecurityHeaders = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
} as const;

/** The route config flag that marks a UI file: authentication lets GET and HEAD of these routes through (http/authentication.ts). */
export interface UiRouteConfig {
  uiAsset: true;
}

export interface UiFile {
  body: Buffer;
  contentType: string;
  etag: string;
}

function uiFile(body: Buffer, contentType: string): UiFile {
  return { body, contentType, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` };
}

/** Files of a folder, by their path relative to it with `/` separators; only known media types; dot files skipped. */
function filesUnder(dir: string): Map<string, UiFile> {
  const files = new Map<string, UiFile>();
  if (!existsSync(dir)) return files;
  const walk = (at: string) => {
    for (const entry of readdirSync(at).sort()) {
      if (entry.startsWith(".")) continue;
      const path = join(at, entry);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const type = contentTypes[extname(entry).toLowerCase()];
        if (type) files.set(relative(dir, path).split(sep).join("/"), uiFile(readFileSync(path), type));
      }
    }
  };
  walk(dir);
  return files;
}

const titles: Record<UiRoot, string> = { config: "Configuration", mapping: "Mapping groups", redact: "Redaction", user: "Access report" };

/** Text safe inside HTML. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * What each UI root serves, read once at startup: URL path -> file. `/<root>/` is the page
 * shell `ui/page.html` with the root's title and script (`ui/<root>/<root>.js`);
 * `/<root>/ui/<name>` the files of `ui/<root>/`, and
 * `/<root>/ui/shared/<name>` the files of `ui/shared/` (the same under every root, so that a
 * page never requests anything outside its component) plus the policy's JSON schema, from
 * which the configuration forms are drawn.
 */
export function uiManifest(uiDir: string = defaultUiDir): Map<string, UiFile> {
  const manifest = new Map<string, UiFile>();
  const shared = filesUnder(join(uiDir, "shared"));
  shared.set("policy-schema.json", uiFile(Buffer.from(JSON.stringify(policyConfigSchema)), contentTypes[".json"]!));
  const shellPath = join(uiDir, "page.html");
  const shell = existsSync(shellPath) ? readFileSync(shellPath, "utf8") : undefined;
  for (const root of uiRoots) {
    const own = filesUnder(join(uiDir, root));
    if (!shell || !own.has(`${root}.js`)) continue;
    const page = shell.replaceAll("{{title}}", escapeHtml(titles[root])).replaceAll("{{root}}", root);
    manifest.set(`/${root}/`, uiFile(Buffer.from(page), contentTypes[".html"]!));
    for (const [name, file] of own) manifest.set(`/${root}/ui/${name}`, file);
    for (const [name, file] of shared) manifest.set(`/${root}/ui/shared/${name}`, file);
  }
  return manifest;
}

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === etag || t === `W/${etag}`;
  });
}

export interface UiRoutesOptions {
  manifest?: Map<string, UiFile>;
  /** Roots whose bare path (`/mapping`) redirects to the page (`/mapping/`): only where no API route holds it. */
  redirects?: UiRoot[];
}

/**
 * The web UIs (spec 1): static files only, from the in-memory manifest, each its own route (an
 * unknown name never matches one, so no path reaches the file system). Marked `uiAsset`:
 * they carry no data and are served without credentials; every API call the pages make is
 * authenticated as usual.
 */
export function uiRoutes(options: UiRoutesOptions = {}): FastifyPluginAsync {
  return async (app) => {
    const manifest = options.manifest ?? uiManifest();
    if (manifest.size === 0) app.log.warn({ uiDir: defaultUiDir }, "no web UI files found: /config/, /mapping/ and /redact/ are not served");
    for (const [url, file] of manifest) {
      app.get(url, { config: { uiAsset: true } satisfies UiRouteConfig, schema: { hide: true } }, async (request, reply) => {
        void reply.headers(uiSecurityHeaders).header("etag", file.etag).header("cache-control", "no-cache");
        if (matches(request.headers["if-none-match"], file.etag)) return reply.code(304).send();
        return reply.type(file.contentType).send(file.body);
      });
    }
    for (const root of options.redirects ?? []) {
      if (!manifest.has(`/${root}/`)) continue;
      app.get(`/${root}`, { config: { uiAsset: true } satisfies UiRouteConfig, schema: { hide: true } }, async (_request, reply) =>
        reply.headers(uiSecurityHeaders).redirect(`/${root}/`, 301),
      );
    }
  };
}
