// @ts-check
/**
 * The access report page (docs/subject-rights.md): a user's (or, for a guardian, a child's)
 * report with charts of use by purpose over time, a CSV download and the restriction controls.
 * Everything shown comes from GET /user/{userId}/report; nothing is computed here but the charts.
 */
import { api, request } from "./shared/api.js";
import { h, replace, saveBlob } from "./shared/dom.js";
import { startPage } from "./shared/page.js";
import { stackedBars } from "./shared/chart.js";

const { main, say, fail, clearMessages } = startPage({ current: "user" });
const palette = ["#1565c0", "#2e7d32", "#ef8f00", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#455a64"];

const userId = h("input", { id: "report-user", name: "userId", required: true, autocomplete: "off" });
const actorId = h("input", { id: "report-actor", name: "actorId", autocomplete: "off" });
const from = h("input", { id: "report-from", name: "from", type: "date" });
const to = h("input", { id: "report-to", name: "to", type: "date" });
const output = h("section", { class: "report", "aria-label": "Report" });
let page = 0;
const pageSize = 20;

/** The report's query string for the current form. @param {Record<string, string>} [extra] */
function query(extra = {}) {
  const params = new URLSearchParams();
  const actor = /** @type {HTMLInputElement} */ (actorId).value.trim();
  if (actor) params.set("actorId", actor);
  const start = /** @type {HTMLInputElement} */ (from).value;
  const end = /** @type {HTMLInputElement} */ (to).value;
  if (start) params.set("from", `${start}T00:00:00.000Z`);
  if (end) params.set("to", `${end}T23:59:59.999Z`);
  for (const [key, value] of Object.entries(extra)) params.set(key, value);
  return params.toString();
}

const reportPath = () => `/user/${encodeURIComponent(/** @type {HTMLInputElement} */ (userId).value.trim())}/report`;

async function show() {
  clearMessages();
  try {
    const { body } = await api(`${reportPath()}?${query({ offset: String(page * pageSize), limit: String(pageSize) })}`);
    render(body);
  } catch (error) {
    replace(output);
    fail(error);
  }
}

/** Use by purpose over time: one bar per day, one segment per purpose. @param {any} report */
function chart(report) {
  const purposes = [...new Set(report.decisions.byDay.map((/** @type {any} */ d) => d.purposeId))];
  const days = [...new Set(report.decisions.byDay.map((/** @type {any} */ d) => d.day))].sort();
  const bars = days.map((day) => ({
    label: day,
    segments: purposes.map((purposeId, i) => {
      const entry = report.decisions.byDay.find((/** @type {any} */ d) => d.day === day && d.purposeId === purposeId);
      return { label: String(purposeId), value: entry ? entry.allowed + entry.denied : 0, color: palette[i % palette.length] ?? "#444" };
    }),
  }));
  return bars.length ? stackedBars({ title: "Decisions about your data by purpose and day", bars }) : h("p", { text: "No decisions in this period." });
}

/** @param {string[]} headings @param {unknown[][]} rows @param {string} caption */
function table(caption, headings, rows) {
  return h(
    "table",
    {},
    h("caption", { text: caption }),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        headings.map((text) => h("th", { scope: "col", text })),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h(
          "tr",
          {},
          row.map((cell) => h("td", { text: cell === undefined || cell === null ? "" : String(cell) })),
        ),
      ),
    ),
  );
}

/** @param {any} report */
function restrictionControls(report) {
  const items = [
    ...report.state.optIns.map((/** @type {any} */ o) => ({ purposeId: o.purposeId, text: `Opt-in: ${o.purposeId}` })),
    ...report.state.consents.map((/** @type {any} */ c) => ({ purposeId: c.purposeId, text: `Consent: ${c.purposeId} (${c.termsId})` })),
  ];
  const restrict = async (/** @type {string[] | undefined} */ purposeIds) => {
    clearMessages();
    try {
      const actor = /** @type {HTMLInputElement} */ (actorId).value.trim();
      const { body } = await api(`/user/${encodeURIComponent(report.userId)}/restriction`, {
        method: "PUT",
        json: { ...(actor ? { actorId: actor } : {}), ...(purposeIds ? { purposeIds } : {}) },
      });
      await show();
      say(`Turned off: ${body.restricted.map((/** @type {any} */ r) => r.purposeId).join(", ") || "nothing"}.`, "ok");
    } catch (error) {
      fail(error);
    }
  };
  return h(
    "section",
    { class: "restriction", "aria-labelledby": "restriction-heading" },
    h("h2", { id: "restriction-heading", text: "Restrict the use of this data" }),
    items.length
      ? h(
          "ul",
          {},
          items.map((item) =>
            h("li", {}, item.text, " ", h("button", { type: "button", text: `Turn off ${item.purposeId}`, onclick: () => restrict([item.purposeId]) })),
          ),
        )
      : h("p", { text: "No opt-ins or consents are on." }),
    h("button", { type: "button", class: "restrict-all", text: "Turn off all opt-ins and consents", onclick: () => restrict(undefined) }),
  );
}

/** @param {any} report */
function render(report) {
  const latest = report.decisions.latest;
  replace(
    output,
    h("h2", { text: `Report of ${report.userId}${report.guardianId ? ` (read by guardian ${report.guardianId})` : ""}` }),
    h("p", {
      class: "period",
      text: `From ${report.period.from} to ${report.period.to}: ${report.decisions.total} decisions, ${report.decisions.allowed} allowed, ${report.decisions.denied} denied.`,
    }),
    h("button", { type: "button", class: "download", text: "Download CSV", onclick: download }),
    h("figure", {}, chart(report)),
    table(
      "Decisions by purpose and door",
      ["Door", "Export", "Purpose", "Third party", "Flow", "Allowed", "Denied"],
      report.decisions.byPurposeAndDoor.map((/** @type {any} */ g) => [g.door, g.exportId, g.purposeId, g.thirdPartyId, g.flow, g.allowed, g.denied]),
    ),
    table(
      "What may use each category now",
      ["Category", "Purposes"],
      report.uses.map((/** @type {any} */ u) => [
        u.categoryId,
        u.uses.map((/** @type {any} */ p) => (p.thirdPartyId ? `${p.purposeId} → ${p.thirdPartyId}` : p.purposeId)).join(", "),
      ]),
    ),
    table(
      `Latest decisions (${latest.offset + 1}-${latest.offset + latest.events.length} of ${latest.total})`,
      ["Time", "Door", "Purpose", "Third party", "Allowed", "Categories"],
      latest.events.map((/** @type {any} */ e) => [e.time, e.door, e.purposeId, e.thirdPartyId, e.allowed ? "yes" : "no", e.categoryIds.join(", ")]),
    ),
    h(
      "div",
      { class: "pager" },
      h("button", { type: "button", text: "Newer", disabled: page === 0, onclick: () => ((page -= 1), show()) }),
      h("button", { type: "button", text: "Older", disabled: latest.offset + latest.events.length >= latest.total, onclick: () => ((page += 1), show()) }),
    ),
    restrictionControls(report),
  );
}

async function download() {
  try {
    const response = await request(`${reportPath()}?${query({ format: "csv", limit: "100" })}`, { headers: { accept: "text/csv" } });
    saveBlob(await response.blob(), "access-report.csv");
  } catch (error) {
    fail(error);
  }
}

main.append(
  h("h1", { text: "Access report" }),
  h(
    "form",
    {
      class: "report-form",
      onsubmit: (/** @type {Event} */ event) => {
        event.preventDefault();
        page = 0;
        void show();
      },
    },
    h("label", { for: "report-user", text: "User id" }),
    userId,
    h("label", { for: "report-actor", text: "Acting as guardian (optional)" }),
    actorId,
    h("label", { for: "report-from", text: "From" }),
    from,
    h("label", { for: "report-to", text: "To" }),
    to,
    h("button", { type: "submit", text: "Show report" }),
  ),
  output,
);
