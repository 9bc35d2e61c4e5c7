// @ts-check
/**
 * /config/: browse and edit every section of the policy, import and export the complete
 * configuration, read the revision history. Forms are drawn from the policy's JSON schema;
 * each section is saved with its own PUT (If-Match: the revision it was loaded at), and the
 * API's problems are shown next to the inputs they name.
 */
import { api, ApiError } from "./shared/api.js";
import { h, replace, saveBlob, formatBytes } from "./shared/dom.js";
import { editor, objectFields, placeProblems, problemSummary, objectBranch, defaultValue, clearProblems } from "./shared/form.js";
import { startPage, describeError } from "./shared/page.js";

const page = startPage({ current: "config" });

/**
 * A section of the configuration: where it is in the complete configuration, its API path,
 * the key of its PUT body, and how it is written.
 * - upsert: lists of identified items, PUT upserts by stableId, DELETE removes one;
 * - replace: override lists, PUT replaces the whole list;
 * - object: user access and guardian rights, PUT replaces the object.
 * @typedef {{ id: string, title: string, about: string, at: string[], api: string, bodyKey?: string, write: "upsert" | "replace" | "object" }} Section
 */

/** @type {Section[]} */
const sections = [
  {
    id: "categories",
    title: "Categories and fields",
    about: "Categories of data and the fields in each. The same field name may occur in several categories, each field with its own stable id.",
    at: ["categories"],
    api: "categories",
    bodyKey: "categories",
    write: "upsert",
  },
  {
    id: "platform-use",
    title: "Platform use",
    about:
      "Purposes the platform uses data for, each with the categories valid for it. An opt-in purpose applies only once the user has opted in; otherwise it is core.",
    at: ["platformUse", "purposes"],
    api: "platform-use",
    bodyKey: "purposes",
    write: "upsert",
  },
  {
    id: "platform-use-overrides",
    title: "Overrides of platform use",
    about: "Users matching an age threshold or a location keep only the purposes listed (platform use and contractual purposes). The list is saved as a whole.",
    at: ["platformUse", "overrides"],
    api: "platform-use/overrides",
    bodyKey: "overrides",
    write: "replace",
  },
  {
    id: "platform-sharing",
    title: "Platform sharing",
    about:
      "Purposes for sharing with third parties: the most categories that may be shared (not more than the linked platform use purpose) and who receives them.",
    at: ["platformSharing", "purposes"],
    api: "platform-sharing",
    bodyKey: "purposes",
    write: "upsert",
  },
  {
    id: "platform-sharing-overrides",
    title: "Overrides of platform sharing",
    about: "Users matching an age threshold or a location keep only the sharing purposes listed. The list is saved as a whole.",
    at: ["platformSharing", "overrides"],
    api: "platform-sharing/overrides",
    bodyKey: "overrides",
    write: "replace",
  },
  {
    id: "user-access",
    title: "User access",
    about: "The categories on which users have core rights.",
    at: ["userAccess"],
    api: "user-access",
    write: "object",
  },
  {
    id: "guardian",
    title: "Guardian rights",
    about: "Who is a child, which categories guardian rights cover, and which third-party flows a guardian may turn off.",
    at: ["guardian"],
    api: "user-access/guardian",
    write: "object",
  },
  {
    id: "contractual-exchange",
    title: "Contractual exchange",
    about: "Contracts: what a contract party may access, and which platform purposes its terms allow (none listed: none allowed).",
    at: ["contractualExchange", "purposes"],
    api: "contractual-exchange",
    bodyKey: "purposes",
    write: "upsert",
  },
  {
    id: "consented-sharing",
    title: "Consented sharing",
    about: "One-way sharing based on the categories a user consents to; it has no overrides.",
    at: ["consentedSharing", "purposes"],
    api: "consented-sharing",
    bodyKey: "purposes",
    write: "upsert",
  },
];

/** @type {any} */
let schema = null;
/** @type {any} */
let config = null;
/** @type {number | null} */
let revision = null;
/** Unsaved edits, by section id: kept while the user moves between sections. @type {Map<string, { value: any, saved: Set<string> }>} */
const drafts = new Map();

const nav = h("nav", { class: "sections", "aria-label": "Configuration sections" });
const content = h("section", { class: "content", "aria-live": "off" });
const layout = h("div", { class: "two-columns" }, nav, content);
page.main.append(h("h1", { text: "Configuration" }), layout);

/** @param {any} root @param {string[]} at */
function dig(root, at) {
  return at.reduce((value, key) => (value == null ? value : value[key]), root);
}

/** @param {string[]} at */
function schemaAt(at) {
  return at.reduce((s, key) => objectBranch(s).properties[key], schema);
}

/** The draft of a section: a deep copy of what the server has, until saved or discarded. @param {Section} section */
function draftOf(section) {
  let draft = drafts.get(section.id);
  if (!draft) {
    const value = structuredClone(dig(config, section.at));
    const saved = new Set(section.write === "upsert" ? value.map((/** @type {any} */ item) => item.stableId) : []);
    draft = { value, saved };
    drafts.set(section.id, draft);
  }
  return draft;
}

/** Whether a section has edits not yet saved. @param {Section} section */
function isDirty(section) {
  const draft = drafts.get(section.id);
  return draft !== undefined && JSON.stringify(draft.value) !== JSON.stringify(dig(config, section.at));
}

/** Choices for reference properties, from the saved configuration. @param {Section} section */
function optionsFor(section) {
  const categories = () => config.categories.map((/** @type {any} */ c) => ({ value: c.stableId, label: `${c.name} (${c.stableId})` }));
  const named = (/** @type {any[]} */ list) => list.map((p) => ({ value: p.stableId, label: `${p.name} (${p.stableId})` }));
  const platformUse = () => named(config.platformUse.purposes);
  const sharing = () => named(config.platformSharing.purposes);
  const contractual = () => named(config.contractualExchange.purposes);
  /** @type {(name: string, path: string, parent: any) => any} */
  return (name, _path, parent) => {
    switch (name) {
      case "categoryIds":
      case "categoryCeilingIds":
      case "contractAccessCategoryIds":
      case "requestedCategoryIds":
        return categories();
      case "platformUsePurposeId":
      case "platformUsePurposeIds":
        return platformUse();
      case "platformSharingPurposeIds":
      case "purposeId":
        return sharing();
      case "allowedPurposeIds":
        return section.id === "platform-sharing-overrides" ? sharing() : [...platformUse(), ...contractual()];
      case "thirdPartyIds": {
        const purpose = config.platformSharing.purposes.find((/** @type {any} */ p) => p.stableId === parent?.purposeId);
        const parties = purpose ? purpose.thirdParties : config.platformSharing.purposes.flatMap((/** @type {any} */ p) => p.thirdParties);
        return [...new Map(parties.map((/** @type {any} */ t) => [t.stableId, { value: t.stableId, label: `${t.name} (${t.stableId})` }])).values()];
      }
      default:
        return undefined;
    }
  };
}

function drawNav() {
  const current = location.hash.slice(1) || sections[0].id;
  const link = (/** @type {string} */ id, /** @type {string} */ text, /** @type {boolean} */ dirty) =>
    h(
      "li",
      {},
      h("a", { href: `#${id}`, "aria-current": id === current ? "page" : undefined }, text, dirty ? h("span", { class: "dirty", text: " (unsaved)" }) : null),
    );
  replace(
    nav,
    h("p", { class: "revision", text: revision === null ? "" : `Revision ${revision}` }),
    h(
      "ul",
      {},
      sections.map((s) => link(s.id, s.title, isDirty(s))),
      link("transfer", "Import and export", false),
      link("history", "Revision history", false),
    ),
  );
}

/** Reads the configuration (and, once, its schema). */
async function load() {
  if (!schema) schema = (await api("ui/shared/policy-schema.json", { askToSignIn: false })).body;
  const answer = await api("/config");
  config = answer.body;
  revision = answer.revision;
}

async function show() {
  const id = location.hash.slice(1) || sections[0].id;
  drawNav();
  if (id === "transfer") return showTransfer();
  if (id === "history") return showHistory();
  const section = sections.find((s) => s.id === id) ?? sections[0];
  showSection(section);
}

/** @param {Section} section */
function showSection(section) {
  const draft = draftOf(section);
  const sectionSchema = schemaAt(section.at);
  const basePath = `/${section.at.join("/")}`;
  const summary = h("div", { class: "summary-slot" });
  const form = h("form", { class: "section-form", novalidate: true, "data-section": section.id });
  const saveButton = h("button", { type: "submit", class: "primary", text: `Save ${section.title.toLowerCase()}`, "data-needs": "config:write" });
  const discardButton = h("button", { type: "button", text: "Discard changes", onclick: () => discard(section) });
  /** The index of a top-level item of an upsert section, when `path` is one (`/categories/3`), else -1. @param {string} path */
  const topIndex = (path) => {
    if (section.write !== "upsert" || !path.startsWith(`${basePath}/`)) return -1;
    const rest = path.slice(basePath.length + 1);
    return /^\d+$/.test(rest) ? Number(rest) : -1;
  };
  /** Whether the item at `path` is stored already (its stableId was loaded from the server). @param {string} path */
  const isSaved = (path) => topIndex(path) >= 0 && draft.saved.has(draft.value[topIndex(path)]?.stableId);
  /** @type {import("./shared/form.js").FormContext} */
  const ctx = {
    options: optionsFor(section),
    // A saved item's stableId is its identity: changing it would make another item.
    locked: (path) => path.endsWith("/stableId") && isSaved(path.slice(0, -"/stableId".length)),
    collapsed: (path) => isSaved(path),
    removeLabel: (path, item) => (isSaved(path) ? `Delete ${item.name || item.stableId} from the configuration` : undefined),
    removeNeeds: (path) => (isSaved(path) ? "config:write" : undefined),
    removeItem: async (path, list, index) => (isSaved(path) ? deleteSaved(section, list[index], summary) : false),
    changed: () => drawNav(),
  };

  let body;
  if (section.write === "object" && draft.value === null) {
    body = h(
      "div",
      {},
      h("p", { text: "Guardian rights are not configured." }),
      h("button", {
        type: "button",
        text: "Configure guardian rights",
        onclick: () => {
          draft.value = defaultValue(sectionSchema);
          showSection(section);
        },
      }),
    );
  } else {
    const holder = { value: draft.value };
    // Draw the section's content directly (its own legend would repeat the heading).
    const s = objectBranch(sectionSchema);
    body =
      s.type === "object"
        ? h("div", { class: "object", "data-path": basePath }, objectFields(s, draft.value, basePath, ctx))
        : editor(sectionSchema, holder, "value", basePath, ctx, { label: section.title });
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await save(section, form, summary, saveButton);
  });
  form.append(body, h("div", { class: "actions" }, section.write === "object" && draft.value === null ? null : saveButton, discardButton));
  replace(content, h("h2", { text: section.title }), h("p", { class: "about", text: section.about }), summary, form);
}

/** @param {Section} section */
async function discard(section) {
  drafts.delete(section.id);
  try {
    await load();
    page.say(`Changes to ${section.title.toLowerCase()} discarded; showing revision ${revision}.`);
  } catch (error) {
    page.fail(error);
  }
  await show();
}

/**
 * The body of a section's PUT, and how a path in it (ERR_REQUEST_INVALID) maps into the complete configuration.
 * @param {Section} section @param {any} value
 */
function bodyOf(section, value) {
  if (section.write === "object") return { body: value, toConfigPath: (/** @type {string} */ p) => `/${section.at.join("/")}${p === "/" ? "" : p}` };
  return {
    body: { [/** @type {string} */ (section.bodyKey)]: value },
    toConfigPath: (/** @type {string} */ p) => p.replace(new RegExp(`^/${section.bodyKey}(?=/|$)`), `/${section.at.join("/")}`),
  };
}

/**
 * @param {Section} section @param {HTMLElement} form @param {HTMLElement} summary @param {HTMLElement} button
 */
async function save(section, form, summary, button) {
  const draft = draftOf(section);
  const { body, toConfigPath } = bodyOf(section, draft.value);
  replace(summary);
  clearProblems(form);
  /** @type {HTMLButtonElement} */ (button).disabled = true;
  try {
    const answer = await api(`/config/${section.api}`, { method: "PUT", json: body, headers: revision === null ? {} : { "if-match": `"${revision}"` } });
    drafts.delete(section.id);
    await load();
    page.say(
      answer.body.changed
        ? `Saved ${section.title.toLowerCase()}: revision ${answer.body.revision}.`
        : `Nothing to save: ${section.title.toLowerCase()} already say this (revision ${answer.body.revision}).`,
      "ok",
    );
    await show();
  } catch (error) {
    /** @type {HTMLButtonElement} */ (button).disabled = false;
    if (error instanceof ApiError && (error.code === "ERR_REQUEST_INVALID" || error.code === "ERR_CONFIG_INVALID") && error.problems.length) {
      const problems = error.problems.map((p) => ({ path: error.code === "ERR_REQUEST_INVALID" ? toConfigPath(p.path) : p.path, problem: p.problem }));
      const { placed, unplaced } = placeProblems(form, problems);
      const all = [...placed, ...unplaced];
      replace(summary, problemSummary(`${all.length} problem${all.length === 1 ? "" : "s"}: nothing was saved`, all));
      page.say(`Not saved: ${error.message}`, "error");
      /** @type {HTMLElement | null} */ (placed[0]?.element.querySelector("input, select, textarea") ?? null)?.focus();
      return;
    }
    if (error instanceof ApiError && error.code === "ERR_CONFIG_REVISION_MISMATCH") {
      page.say(
        "Not saved: the configuration was changed elsewhere since this page loaded it. Your edits are still here; use “Discard changes” to load the current configuration, then make them again.",
        "error",
      );
      return;
    }
    page.fail(error);
  }
}

/**
 * Deletes a saved item (DELETE /config/<section>/<id>); a 409 lists what still refers to it.
 * @param {Section} section @param {any} item @param {HTMLElement} summary
 */
async function deleteSaved(section, item, summary) {
  replace(summary);
  try {
    const answer = await api(`/config/${section.api}/${encodeURIComponent(item.stableId)}`, {
      method: "DELETE",
      headers: revision === null ? {} : { "if-match": `"${revision}"` },
    });
    // Keep the other unsaved edits of this section; forget the deleted item.
    const draft = draftOf(section);
    draft.value = draft.value.filter((/** @type {any} */ i) => i.stableId !== item.stableId);
    draft.saved.delete(item.stableId);
    const kept = draft;
    await load();
    drafts.set(section.id, kept);
    page.say(`Deleted ${item.name || item.stableId}: revision ${answer.body.revision}.`, "ok");
    await show();
  } catch (error) {
    if (error instanceof ApiError && error.code === "ERR_CONFIG_REFERENCED") {
      replace(
        summary,
        problemSummary(
          `${item.name || item.stableId} is still referred to; nothing was deleted`,
          error.problems.length ? error.problems : [{ path: "", problem: error.message }],
        ),
      );
    } else page.fail(error);
  }
  return true;
}

function showTransfer() {
  const fileInput = h("input", { type: "file", id: "import-file", accept: "application/json,.json" });
  const result = h("div", { class: "import-result" });
  const importButton = h("button", { type: "submit", class: "primary", text: "Replace the configuration with this file", "data-needs": "config:admin" });
  const form = h(
    "form",
    {
      class: "import",
      onsubmit: async (/** @type {Event} */ event) => {
        event.preventDefault();
        replace(result);
        const file = /** @type {HTMLInputElement} */ (fileInput).files?.[0];
        if (!file) {
          replace(result, h("p", { class: "notice error", role: "alert", text: "Choose a file first." }));
          return;
        }
        let parsed;
        try {
          parsed = JSON.parse(await file.text());
        } catch (error) {
          replace(
            result,
            h("p", { class: "notice error", role: "alert", text: `${file.name} is not JSON: ${error instanceof Error ? error.message : error}` }),
          );
          return;
        }
        try {
          const answer = await api("/config", { method: "PUT", json: parsed, headers: revision === null ? {} : { "if-match": `"${revision}"` } });
          drafts.clear();
          await load();
          drawNav();
          replace(
            result,
            h("p", {
              class: "notice ok",
              text: answer.body.changed
                ? `Imported ${file.name}: revision ${answer.body.revision}.`
                : `${file.name} is the current configuration already; nothing changed.`,
            }),
          );
        } catch (error) {
          if (error instanceof ApiError && error.problems.length)
            replace(result, problemSummary(`${file.name}: ${error.problems.length} problem(s); nothing was changed`, error.problems));
          else if (error instanceof ApiError && error.code === "ERR_CONFIG_REVISION_MISMATCH")
            replace(
              result,
              h("p", { class: "notice error", role: "alert", text: "The configuration changed since this page loaded it: reload the page and import again." }),
            );
          else replace(result, h("p", { class: `notice ${describeError(error)[1]}`, role: "alert", text: describeError(error)[0] }));
        }
      },
    },
    h("div", { class: "field" }, h("label", { for: "import-file", text: "Configuration file (JSON, as exported)" }), fileInput),
    h("p", { class: "hint", text: "The whole configuration is replaced, mapping groups included, or nothing is if any problem is found." }),
    h("div", { class: "actions" }, importButton),
  );
  replace(
    content,
    h("h2", { text: "Import and export" }),
    h("h3", { text: "Export" }),
    h("p", { text: "The complete configuration (every section and the mapping groups) as one JSON file, to keep or to import elsewhere." }),
    h("button", {
      type: "button",
      class: "primary",
      text: "Download the configuration",
      onclick: async () => {
        try {
          const answer = await api("/config");
          const blob = new Blob([JSON.stringify(answer.body, null, 2)], { type: "application/json" });
          saveBlob(blob, `warden-config-revision-${answer.revision ?? "unknown"}.json`);
          page.say(`Downloaded revision ${answer.revision} (${formatBytes(blob.size)}).`, "ok");
        } catch (error) {
          page.fail(error);
        }
      },
    }),
    h("h3", { text: "Import" }),
    form,
    result,
  );
}

/** @param {number | undefined} before */
async function showHistory(before = undefined) {
  const detail = h("div", { class: "revision-detail" });
  replace(
    content,
    h("h2", { text: "Revision history" }),
    h("p", { text: "Every change to the configuration, newest first: who made it, when and what." }),
    h("p", { text: "Loading…" }),
  );
  let answer;
  try {
    answer = await api(`/config/history?limit=20${before ? `&before=${before}` : ""}`);
  } catch (error) {
    replace(content, h("h2", { text: "Revision history" }));
    page.fail(error);
    return;
  }
  /** @type {Array<{ revision: number, at: string, by: string, change: string }>} */
  const revisions = answer.body.revisions;
  const oldest = revisions.at(-1)?.revision;
  replace(
    content,
    h("h2", { text: "Revision history" }),
    h("p", { text: "Every change to the configuration, newest first: who made it, when and what." }),
    revisions.length === 0
      ? h("p", { text: "No revisions yet." })
      : h(
          "table",
          { class: "history" },
          h("caption", { class: "visually-hidden", text: "Revisions" }),
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ["Revision", "When", "By", "Change", ""].map((t) => h("th", { scope: "col", text: t })),
            ),
          ),
          h(
            "tbody",
            {},
            revisions.map((r) =>
              h(
                "tr",
                {},
                h("td", { text: String(r.revision) }),
                h("td", {}, h("time", { dateTime: r.at, text: new Date(r.at).toLocaleString() })),
                h("td", { text: r.by }),
                h("td", { text: r.change }),
                h("td", {}, h("button", { type: "button", text: `View revision ${r.revision}`, onclick: () => showRevision(r.revision, detail) })),
              ),
            ),
          ),
        ),
    oldest && oldest > 1 ? h("button", { type: "button", text: "Older revisions", onclick: () => showHistory(oldest) }) : null,
    detail,
  );
}

/** @param {number} number @param {HTMLElement} into */
async function showRevision(number, into) {
  try {
    const { body } = await api(`/config/history/${number}`);
    const text = JSON.stringify(body.config, null, 2);
    replace(
      into,
      h("h3", { text: `Revision ${number}`, tabindex: -1 }),
      h("p", { text: `${body.change}, by ${body.by}, ${new Date(body.at).toLocaleString()}.` }),
      h(
        "div",
        { class: "actions" },
        h("button", {
          type: "button",
          text: "Download this revision",
          onclick: () => saveBlob(new Blob([text], { type: "application/json" }), `warden-config-revision-${number}.json`),
        }),
        h("button", {
          type: "button",
          text: `Restore revision ${number}`,
          onclick: async () => {
            try {
              const answer = await api("/config", { method: "PUT", json: body.config, headers: revision === null ? {} : { "if-match": `"${revision}"` } });
              drafts.clear();
              await load();
              page.say(
                answer.body.changed
                  ? `Restored revision ${number} as revision ${answer.body.revision}.`
                  : `Revision ${number} is the current configuration already.`,
                "ok",
              );
              await showHistory();
            } catch (error) {
              page.fail(error);
            }
          },
        }),
      ),
      h("pre", { class: "json", tabindex: 0, "aria-label": `Configuration at revision ${number}`, text }),
    );
    /** @type {HTMLElement} */ (into.firstChild).focus();
  } catch (error) {
    page.fail(error);
  }
}

async function start() {
  try {
    await load();
  } catch (error) {
    page.fail(error);
    replace(content, h("p", {}, "The configuration could not be read. ", h("button", { type: "button", text: "Try again", onclick: start })));
    return;
  }
  await show();
}

window.addEventListener("hashchange", () => {
  page.clearMessages();
  void show();
});
window.addEventListener("beforeunload", (event) => {
  if (sections.some(isDirty)) event.preventDefault();
});
void start();
