import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import type { NatsServerProcess } from "../../service/nats-server";
import { realisticPolicy } from "../../testkit/policy";
import { call } from "../../testkit/http";
import { startNats } from "../../testkit/nats";
import { artifactsDir, NodeProcess } from "../../testkit/node-process";

const screenshots = join(artifactsDir, "web-ui");
const waitMs = 30_000;

describe("the access report page in headless Chromium (issue 25)", () => {
  let nats: NatsServerProcess;
  let node: NodeProcess;
  let browser: Browser;
  let page: Page;
  const requested: string[] = [];
  const pageErrors: string[] = [];
  const childDob = `${new Date().getUTCFullYear() - 9}-01-01`;

  before(async () => {
    mkdirSync(screenshots, { recursive: true });
    nats = await startNats();
    node = await NodeProcess.start({ nodeId: "web-ui-report", natsUrl: nats.url });
    assert.equal((await call(node, "PUT", "/config", realisticPolicy())).status, 200);
    for (const [userId, dob] of [
      ["ann", "1990-01-01"],
      ["gus", "1980-01-01"],
      ["kit", childDob],
    ] as const)
      assert.equal((await call(node, "PUT", "/user", { userId, attributes: { dob, location: "US" } })).status, 200);
    assert.equal((await call(node, "PUT", "/user/terms?userId=ann")).status, 200);
    assert.equal((await call(node, "PUT", "/user/terms?userId=kit&acceptorId=gus")).status, 200);
    assert.equal(
      (await call(node, "PUT", "/user/consent", { userId: "ann", consents: { affirmativeConsents: [{ purposeId: "personalization" }] } })).status,
      200,
    );
    for (const purposeId of ["service", "service", "personalization", "analytics"])
      assert.equal((await call(node, "PUT", "/decision", { userId: "ann", type: "platformUse", purposeId })).status, 200);
    assert.equal((await call(node, "PUT", "/decision", { userId: "kit", type: "platformUse", purposeId: "service" })).status, 200);
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
    });
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, acceptDownloads: true });
    context.setDefaultTimeout(waitMs);
    context.on("request", (request) => requested.push(request.url()));
    page = await context.newPage();
    page.on("pageerror", (error) => pageErrors.push(error.message));
  });

  after(async () => {
    await browser?.close();
    await node?.stop();
    await nats?.stop();
  });

  test("a user's report: counts, a chart of use by purpose per day, the latest decisions, a CSV download", async () => {
    await page.goto(`${node.url}/user/`);
    await page.getByLabel("User id").fill("ann");
    await page.getByRole("button", { name: "Show report" }).click();
    await page.getByRole("heading", { name: "Report of ann" }).waitFor();
    assert.match(await page.locator(".period").innerText(), /4 decisions, 4 allowed, 0 denied/);
    const chart = page.getByRole("img", { name: /Decisions about your data by purpose and day/ });
    const label = (await chart.getAttribute("aria-label")) ?? "";
    assert.match(label, /2 service/);
    assert.match(label, /1 personalization/);
    const latest = page.locator("table", { has: page.locator("caption", { hasText: "Latest decisions" }) });
    assert.equal(await latest.locator("tbody tr").count(), 4);
    await page.screenshot({ path: join(screenshots, "access-report.png"), fullPage: true });
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    const csv = readFileSync(await download.path(), "utf8");
    assert.equal(csv.split("\r\n").filter((line) => line.startsWith("event,")).length, 4);
  });

  test("the restriction controls turn opt-ins off, and the next decision is denied", async () => {
    await page.getByRole("button", { name: "Turn off all opt-ins and consents" }).click();
    await page.locator(".messages .notice.ok", { hasText: "Turned off: personalization" }).waitFor();
    const answer = await call(node, "PUT", "/decision", { userId: "ann", type: "platformUse", purposeId: "personalization" });
    assert.equal(answer.body.allowed, false);
    await page.getByText("No opt-ins or consents are on.").waitFor();
  });

  test("a guardian sees the child's report; a stranger is told why not", async () => {
    await page.getByLabel("User id").fill("kit");
    await page.getByLabel("Acting as guardian (optional)").fill("gus");
    await page.getByRole("button", { name: "Show report" }).click();
    await page.getByRole("heading", { name: "Report of kit (read by guardian gus)" }).waitFor();
    await page.getByLabel("Acting as guardian (optional)").fill("ann");
    await page.getByRole("button", { name: "Show report" }).click();
    await page.locator(".messages .notice.error", { hasText: "ERR_USER_GUARDIAN_INVALID" }).waitFor();
  });

  test("nothing was requested from another host, and the page threw nothing", () => {
    const origin = new URL(node.url).origin;
    assert.ok(requested.length > 5);
    assert.deepEqual(
      requested.filter((url) => !url.startsWith(origin) && !url.startsWith("blob:") && !url.startsWith("data:")),
      [],
    );
    assert.deepEqual(pageErrors, []);
  });
});
