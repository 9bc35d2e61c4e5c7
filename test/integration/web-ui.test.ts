import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import type { NatsServerProcess } from "../../service/nats-server";
import { startNats } from "../../testkit/nats";
import { artifactsDir, NodeProcess } from "../../testkit/node-process";
import { OidcProvider } from "../helpers/oidc";
import { SlapdServer } from "../../testkit/slapd";
import { tempDir } from "../../testkit/temp";

const alice = { uid: "alice", password: "wonderland" };
/** May read the configuration and mapping groups, nothing else (docs/authorization.md). */
const vic = { uid: "vic", password: "viewer-pw" };
const screenshots = join(artifactsDir, "web-ui");
/** Playwright's own waits (for an element, a navigation) give up after this; no assertion depends on time. */
const waitMs = 30_000;

const people = [
  "id,email,clicks,notes",
  'ann,ann@example.org,12,"likes, commas"',
  "bob,bob@example.org,3,x",
  "ghost,ghost@example.org,1,y",
  ",anon@example.org,5,z",
  'cy,cy@example.org,7,"say ""hi"""',
  "",
].join("\n");
/** ann and cy accepted terms; bob did not; ghost is unknown; one row names no one. Only email (contact) is allowed for "service". */
const redactedPeople = ["id,email,clicks,notes", ",ann@example.org,,", ",cy@example.org,,", ""].join("\n");

function securityConfig(ldapPort: number, provider: OidcProvider) {
  return {
    verifiers: [
      {
        verifier: "ldap",
        default: "directory",
        profiles: [{ profile: "directory", configuration: { hostname: `127.0.0.1:${ldapPort}`, rootComponents: "ou=people,dc=example,dc=org" } }],
      },
      {
        verifier: "oauth",
        profiles: [
          { profile: "idp", configuration: { serverMetadataUrl: provider.metadataUrl, resourceServerId: OidcProvider.resource, clientRequestTimeout: 5 } },
        ],
      },
    ],
    credentials: [
      { type: "namepwd", verifiers: [{ verifier: "ldap", default: true }] },
      { type: "rawBearerToken", verifiers: [{ verifier: "oauth", profile: "idp" }] },
    ],
    enforcedComponents: [{ componentName: "config" }, { componentName: "mapping" }, { componentName: "redact" }],
    authorization: {
      rules: [
        { name: "admin", ldapUsers: [alice.uid], permissions: ["*:admin"] },
        { name: "viewer", ldapUsers: [vic.uid], permissions: ["config:read", "mapping:read"] },
        { name: "read tokens", scopes: ["read"], permissions: ["*:read"] },
      ],
    },
  };
}

describe("the web UIs in headless Chromium, against a node enforcing Basic (LDAP) and Bearer (OAuth) on config, mapping and redact", () => {
  let slapd: SlapdServer;
  let provider: OidcProvider;
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let browser: Browser;
  /** The signed-in tab (sessionStorage is per tab): it goes from page to page as a person would. */
  let page: Page;
  const requested: string[] = [];
  const pageErrors: string[] = [];
  let step = 0;

  const basic = `Basic ${Buffer.from(`${alice.uid}:${alice.password}`).toString("base64")}`;
  /** The API as a script sees it, to check what the pages did. */
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${node.url}${path}`, {
      method,
      headers: { authorization: basic, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, text, json: () => JSON.parse(text) };
  };

  async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, acceptDownloads: true });
    context.setDefaultTimeout(waitMs);
    context.on("request", (request) => requested.push(request.url()));
    const opened = await context.newPage();
    opened.on("pageerror", (error) => pageErrors.push(error.message));
    return { context, page: opened };
  }

  const shoot = (target: Page, name: string) => target.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
  /** The problem shown next to the input whose value is at `path`. */
  const problemAt = (target: Page, path: string) => target.locator(`[data-path="${path}"] > .field-error`);
  const inputAt = (target: Page, path: string) => target.locator(`[data-path="${path}"] > :is(input, select, textarea)`);
  const notice = (target: Page) => target.locator(".messages .notice");

  async function signInWithPassword(target: Page, who = alice) {
    const dialog = target.getByRole("dialog", { name: "Sign in" });
    await dialog.waitFor();
    await dialog.getByRole("radio", { name: "User name and password" }).check();
    await dialog.getByLabel("User name", { exact: true }).fill(who.uid);
    await dialog.getByLabel("Password", { exact: true }).fill(who.password);
    await dialog.getByRole("button", { name: "Sign in" }).click();
    await dialog.waitFor({ state: "detached" });
  }

  before(async () => {
    mkdirSync(screenshots, { recursive: true });
    const dir = tempDir("web-ui");
    slapd = await SlapdServer.start({ suffix: "dc=example,dc=org", users: [alice, vic] });
    provider = await OidcProvider.start();
    nats = await startNats();
    const file = join(dir, "security.json");
    writeFileSync(file, JSON.stringify(securityConfig(slapd.port, provider)));
    node = await NodeProcess.start({ nodeId: "web-ui-1", natsUrl: nats.url, env: { SECURITY_CONFIG: file } });
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
    });
    ({ page } = await newPage());
  });

  afterEach(async () => {
    // What the signed-in tab showed last: where to look when a step failed.
    await page?.screenshot({ path: join(screenshots, `last-step-${++step}.png`), fullPage: true }).catch(() => undefined);
  });

  after(async () => {
    await browser?.close();
    await node?.stop();
    await nats?.stop();
    await provider?.stop();
    await slapd?.stop();
  });

  test("/config/: the page asks for credentials (Basic), then categories and purposes are created through the forms, with the API's problems next to their fields", async () => {
    await page.goto(`${node.url}/config/`);
    const dialog = page.getByRole("dialog", { name: "Sign in" });
    await dialog.waitFor();
    // The choices are the gateway's challenges (Basic and Bearer); the browser's own prompt never shows.
    assert.equal(await dialog.getByRole("radio").count(), 2);
    await signInWithPassword(page);
    await page.getByText("Revision 0").waitFor();
    assert.equal(await page.locator("header .who").textContent(), "Signed in: alice");

    // A stableId with a space: refused by the schema (a path in the PUT body), shown at that input.
    await page.getByRole("button", { name: "Add category" }).click();
    await inputAt(page, "/categories/0/stableId").fill("contact details");
    await inputAt(page, "/categories/0/name").fill("Contact details");
    await page.locator('[data-path="/categories/0"]').getByRole("button", { name: "Add field" }).click();
    await inputAt(page, "/categories/0/fields/0/stableId").fill("contact.email");
    await inputAt(page, "/categories/0/fields/0/name").fill("Email");
    await page.getByRole("button", { name: "Save categories and fields" }).click();
    await problemAt(page, "/categories/0/stableId").waitFor();
    assert.match(String(await problemAt(page, "/categories/0/stableId").textContent()), /a stableId may contain only letters, digits/);
    assert.equal(await inputAt(page, "/categories/0/stableId").getAttribute("aria-invalid"), "true");
    assert.equal(await page.locator(".field-error:not([hidden])").count(), 1, "only that field shows a problem");
    assert.match(String(await page.locator(".error-summary").textContent()), /1 problem: nothing was saved/);
    await shoot(page, "config-validation-error");
    assert.equal((await call("GET", "/config")).json().categories.length, 0, "nothing was saved");

    await inputAt(page, "/categories/0/stableId").fill("contact");
    await page.getByRole("button", { name: "Add category" }).click();
    await inputAt(page, "/categories/1/stableId").fill("usage");
    await inputAt(page, "/categories/1/name").fill("Usage");
    await page.locator('[data-path="/categories/1"]').getByRole("button", { name: "Add field" }).click();
    await inputAt(page, "/categories/1/fields/0/stableId").fill("usage.clicks");
    await inputAt(page, "/categories/1/fields/0/name").fill("Clicks");
    await page.getByRole("button", { name: "Save categories and fields" }).click();
    await notice(page).filter({ hasText: "Saved categories and fields: revision 1." }).waitFor();
    assert.deepEqual((await call("GET", "/config/categories")).json().categories, [
      { stableId: "contact", name: "Contact details", fields: [{ stableId: "contact.email", name: "Email" }] },
      { stableId: "usage", name: "Usage", fields: [{ stableId: "usage.clicks", name: "Clicks" }] },
    ]);

    // Platform use: a core purpose and an opt-in one; categories are picked from the configured ones.
    await page.getByRole("link", { name: "Platform use", exact: true }).click();
    await page.getByRole("heading", { name: "Platform use" }).waitFor();
    await page.getByRole("button", { name: "Add purpose" }).click();
    await inputAt(page, "/platformUse/purposes/0/stableId").fill("service");
    await inputAt(page, "/platformUse/purposes/0/name").fill("Providing the service");
    await page.locator('[data-path="/platformUse/purposes/0/categoryIds"]').getByLabel("Contact details (contact)").check();
    await page.getByRole("button", { name: "Add purpose" }).click();
    await inputAt(page, "/platformUse/purposes/1/stableId").fill("personalization");
    await inputAt(page, "/platformUse/purposes/1/name").fill("Personalization");
    await page.locator('[data-path="/platformUse/purposes/1/categoryIds"]').getByLabel("Usage (usage)").check();
    await inputAt(page, "/platformUse/purposes/1/optIn").check();
    // A third purpose reusing a category's stableId: well-formed, but inconsistent (a path in the complete configuration).
    await page.getByRole("button", { name: "Add purpose" }).click();
    await inputAt(page, "/platformUse/purposes/2/stableId").fill("contact");
    await inputAt(page, "/platformUse/purposes/2/name").fill("Clash");
    await page.getByRole("button", { name: "Save platform use" }).click();
    await problemAt(page, "/platformUse/purposes/2/stableId").waitFor();
    assert.match(String(await problemAt(page, "/platformUse/purposes/2/stableId").textContent()), /duplicate stableId 'contact' \(also at \/categories\/0\)/);
    assert.equal(await page.locator(".field-error:not([hidden])").count(), 1);
    await page.locator('[data-path="/platformUse/purposes/2"]').getByRole("button", { name: "Remove purpose" }).click();
    await page.getByRole("button", { name: "Save platform use" }).click();
    await notice(page).filter({ hasText: "Saved platform use: revision 2." }).waitFor();
    assert.deepEqual((await call("GET", "/config/platform-use")).json().purposes, [
      { stableId: "service", name: "Providing the service", categoryIds: ["contact"] },
      { stableId: "personalization", name: "Personalization", categoryIds: ["usage"], optIn: true },
    ]);
    // Saved items are folded under their names, their stableIds fixed.
    await page.locator("summary", { hasText: "Providing the service (service)" }).click();
    assert.equal(await inputAt(page, "/platformUse/purposes/0/stableId").getAttribute("readonly"), "");
    await shoot(page, "config");

    // The history names who changed what; export gives the complete configuration; importing it again changes nothing.
    await page.getByRole("link", { name: "Revision history" }).click();
    const rows = page.locator("table.history tbody tr");
    await rows.first().waitFor();
    assert.deepEqual(await rows.locator("td:first-child").allTextContents(), ["2", "1"]);
    assert.deepEqual(await rows.locator("td:nth-child(3)").allTextContents(), ["alice", "alice"]);
    await page.getByRole("link", { name: "Import and export" }).click();
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download the configuration" }).click()]);
    const exported = readFileSync(await download.path(), "utf8");
    assert.deepEqual(JSON.parse(exported), (await call("GET", "/config")).json());
    await page
      .getByLabel("Configuration file (JSON, as exported)")
      .setInputFiles({ name: "warden-config.json", mimeType: "application/json", buffer: Buffer.from(exported) });
    await page.getByRole("button", { name: "Replace the configuration with this file" }).click();
    await page.getByText("warden-config.json is the current configuration already; nothing changed.").waitFor();
  });

  test("/mapping/: a mapping group is defined with categories and fields picked from the configuration; the field that resolves the user is shown", async () => {
    await page.goto(`${node.url}/mapping/`);
    await page.getByText("No mapping groups yet.").waitFor();
    await page.getByRole("link", { name: "+ New mapping group" }).click();
    await page.getByLabel("Group name").fill("people-csv");
    await page.getByLabel("Record field 1", { exact: true }).fill("id");
    assert.equal(await page.getByLabel("Resolves the user").first().isChecked(), true, "a new group starts with a user field");
    const addRow = async (recordField: string, category?: string, field?: string) => {
      await page.getByRole("button", { name: "Add field mapping" }).click();
      const n = await page.locator("table.mappings tbody tr").count();
      await page.getByLabel(`Record field ${n}`, { exact: true }).fill(recordField);
      if (category) await page.getByLabel(`Category of record field ${n}`).selectOption(category);
      if (field) await page.getByLabel(`Field of record field ${n}`).selectOption(field);
    };
    await addRow("email", "contact", "contact.email");
    await addRow("clicks", "usage");
    await addRow("notes");
    await page.getByRole("button", { name: "Create mapping group" }).click();
    await notice(page).filter({ hasText: "Saved mapping group people-csv: revision 3." }).waitFor();
    assert.deepEqual((await call("GET", "/mapping/groups/people-csv")).json(), {
      name: "people-csv",
      fieldMappings: [
        { recordField: "id", resourceContext: true },
        { recordField: "email", categoryId: "contact", fieldId: "contact.email" },
        { recordField: "clicks", categoryId: "usage" },
        { recordField: "notes" },
      ],
    });
    assert.deepEqual(await page.locator(".resolving .badge.context").allTextContents(), ["id"]);
    await page.getByRole("link", { name: "people-csv" }).waitFor();
    await shoot(page, "mapping");
  });

  test("/redact/: a CSV is uploaded with progress, its stats and chart shown, and the preview shows exactly the redacted rows; a single record shows why each field was kept or emptied", async () => {
    // The users of the document (the user API is not enforced here).
    for (const [userId, accept] of [
      ["ann", true],
      ["bob", false],
      ["cy", true],
    ] as const) {
      assert.equal(
        (
          await fetch(`${node.url}/user`, {
            method: "PUT",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ userId, attributes: { dob: "1990-01-01", location: "US" } }),
          })
        ).status,
        200,
      );
      if (accept) assert.equal((await fetch(`${node.url}/user/terms?userId=${userId}`, { method: "PUT" })).status, 200);
    }

    await page.goto(`${node.url}/redact/`);
    await page.getByRole("heading", { name: "Recent jobs" }).waitFor();
    await page.getByLabel("Mapping group").locator("option", { hasText: "people-csv" }).waitFor({ state: "attached" });
    await page.getByLabel("Type of purpose").selectOption("platformUse");
    await page.getByLabel("Purpose", { exact: true }).selectOption("service");
    await page.getByLabel("Mapping group").selectOption("people-csv");
    await page.getByLabel("Document", { exact: true }).setInputFiles({ name: "people.csv", mimeType: "text/csv", buffer: Buffer.from(people) });
    await page.getByRole("button", { name: "Upload and redact" }).click();

    const preview = page.locator("table.preview-rows");
    await preview.waitFor();
    assert.deepEqual(await preview.locator("thead th").allTextContents(), ["id", "email", "clicks", "notes"]);
    const shown = await preview.locator("tbody tr").evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
    assert.deepEqual(shown, [
      ["(empty)", "ann@example.org", "(empty)", "(empty)"],
      ["(empty)", "cy@example.org", "(empty)", "(empty)"],
    ]);
    assert.equal(
      await page
        .locator("progress")
        .nth(0)
        .evaluate((bar) => (bar as unknown as { value: number }).value),
      100,
      "upload bar",
    );
    assert.equal(
      await page
        .locator("progress")
        .nth(1)
        .evaluate((bar) => (bar as unknown as { value: number }).value),
      100,
      "job bar",
    );
    const statRows = await page
      .locator("table.rows-stats tr")
      .evaluateAll((trs) => trs.map((tr) => [tr.querySelector("th")?.textContent, tr.querySelector("td")?.textContent]));
    assert.deepEqual(statRows, [
      ["In", "5"],
      ["Kept", "2"],
      ["Dropped", "3"],
      ["… NO_TERMS_ACCEPTED", "1"],
      ["… NO_USER_ID", "1"],
      ["… UNKNOWN_USER", "1"],
    ]);
    const fieldRows = await page
      .locator("table.fields-stats tbody tr")
      .evaluateAll((trs) => trs.map((tr) => [...tr.children].slice(0, 4).map((c) => c.textContent)));
    assert.deepEqual(fieldRows, [
      ["id", "—", "0", "2"],
      ["email", "contact", "2", "0"],
      ["clicks", "usage", "0", "2"],
      ["notes", "—", "0", "2"],
    ]);
    assert.match(String(await page.locator(".chart svg").first().getAttribute("aria-label")), /Rows: 2 kept, 1 dropped: NO_TERMS_ACCEPTED/);

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download the redacted document" }).click()]);
    assert.equal(readFileSync(await download.path(), "utf8"), redactedPeople, "the downloaded file is the redacted document");
    await shoot(page, "redact");

    // One record: each field kept or emptied, and why (the API's own per-field answer).
    await page.getByLabel("Record (JSON)").fill(JSON.stringify({ id: "ann", email: "ann@example.org", clicks: "12", notes: "n", extra: "e" }));
    await page.getByRole("button", { name: "Redact the record" }).click();
    const fields = page.locator("table.record-fields tbody tr");
    await fields.first().waitFor();
    const perField = await fields.evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    assert.deepEqual(perField.sort(), [
      ["clicks", "12", "null", "emptied", "category 'usage' is not allowed for this purpose"],
      ["email", "ann@example.org", "ann@example.org", "kept", "category 'contact' is allowed"],
      ["extra", "e", "null", "emptied", "not in the mapping group"],
      ["id", "ann", "null", "emptied", "mapped to no category"],
      ["notes", "n", "null", "emptied", "mapped to no category"],
    ]);
    await shoot(page, "redact-record");
    await page.getByLabel("Record (JSON)").fill(JSON.stringify({ id: "bob", email: "bob@example.org" }));
    await page.getByRole("button", { name: "Redact the record" }).click();
    await page.locator(".record-dropped").waitFor();
    assert.deepEqual(await page.locator(".record-dropped .reasons code").allTextContents(), ["NO_TERMS_ACCEPTED"]);
    assert.equal(await page.locator(".record-dropped").getByText("bob@example.org").count(), 0, "a dropped record shows none of its values");
  });

  test("a Bearer token from the OAuth provider opens /mapping/ in a new tab", async () => {
    const { context, page: tab } = await newPage();
    try {
      await tab.goto(`${node.url}/mapping/`);
      const dialog = tab.getByRole("dialog", { name: "Sign in" });
      await dialog.waitFor();
      await dialog.getByRole("radio", { name: "Bearer token" }).check();
      await dialog.getByRole("textbox", { name: "Bearer token" }).fill(await provider.jwtToken());
      await dialog.getByRole("button", { name: "Sign in" }).click();
      await tab.getByRole("link", { name: "people-csv" }).first().waitFor();
      assert.equal(await tab.locator("header .who").textContent(), "Signed in: bearer token");
      assert.deepEqual(await tab.locator("table tbody tr td:nth-child(3) .badge").allTextContents(), ["id"]);
      await shoot(tab, "mapping-bearer");
    } finally {
      await context.close();
    }
  });

  test("a subject who may only read: the save buttons are disabled with the reason, and a 403 is said plainly", async () => {
    const { context, page: tab } = await newPage();
    try {
      await tab.goto(`${node.url}/config/`);
      await signInWithPassword(tab, vic);
      const save = tab.getByRole("button", { name: "Save categories and fields" });
      await save.waitFor();
      await tab.locator("button.primary[data-needs='config:write'][disabled]").first().waitFor();
      assert.equal(await tab.locator("button[data-needs='config:write']:not([disabled])").count(), 0, "every save button of the page");
      assert.equal(await save.isDisabled(), true);
      assert.equal(await save.getAttribute("title"), "You are not allowed to do this (it needs config:write)");
      const before = (await call("GET", "/config")).json().categories.length;
      assert.ok(before > 0, "the earlier steps saved categories");
      await tab.locator("summary", { hasText: "Contact details (contact)" }).click();
      const remove = tab.getByRole("button", { name: "Delete Contact details from the configuration" });
      assert.equal(await remove.isDisabled(), true, "deleting a saved item is a write too");
      assert.equal(await remove.getAttribute("title"), "You are not allowed to do this (it needs config:write)");
      // Rights can be taken away after the page read them: the button enabled again as a stale page would have it, the gateway's 403 is what the subject sees.
      await remove.evaluate((button) => {
        (button as unknown as { disabled: boolean }).disabled = false;
      });
      await remove.click();
      const shown = notice(tab).filter({ hasText: "Not allowed" });
      await shown.waitFor();
      assert.match(String(await shown.textContent()), /^Not allowed: you are signed in, but you do not hold config:write\. Nothing was done/);
      assert.equal((await call("GET", "/config")).json().categories.length, before, "nothing was deleted");
      await shoot(tab, "config-forbidden");
      await tab.getByRole("link", { name: "Import and export" }).click();
      const importButton = tab.getByRole("button", { name: "Replace the configuration with this file" });
      await importButton.waitFor();
      assert.equal(await importButton.isDisabled(), true, "replacing the whole configuration is config:admin");
      assert.equal(await importButton.getAttribute("title"), "You are not allowed to do this (it needs config:admin)");
    } finally {
      await context.close();
    }
  });

  test("a directory that does not answer is told apart from wrong credentials (503 ERR_AUTH_UNAVAILABLE)", async () => {
    await slapd.stop();
    const { context, page: tab } = await newPage();
    try {
      await tab.goto(`${node.url}/config/`);
      await signInWithPassword(tab);
      const shown = tab.locator(".messages .notice.auth-unavailable");
      await shown.waitFor();
      assert.match(String(await shown.textContent()), /could not check your credentials right now/);
      await shoot(tab, "auth-unavailable");
    } finally {
      await context.close();
    }
  });

  test("nothing was requested from another host, and no page threw", () => {
    const origin = new URL(node.url).origin;
    assert.ok(requested.length > 20, "the requests were recorded");
    const elsewhere = requested.filter((url) => !url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== origin);
    assert.deepEqual(elsewhere, []);
    assert.deepEqual(pageErrors, []);
  });
});
