// @ts-check
/**
 * /mapping/: mapping groups tie record fields (CSV columns, `<table>.<column>`, dotted JSON
 * paths) to category fields. List, create, edit and delete groups; categories and fields are
 * picked from the configured ones; the fields that resolve the user are shown.
 */
import { api, ApiError } from "./shared/api.js";
import { h, replace, uid } from "./shared/dom.js";
import { clearProblems, placeProblems, problemSummary } from "./shared/form.js";
import { startPage } from "./shared/page.js";

const page = startPage({ current: "mapping" });

/** @typedef {{ recordField: string, categoryId?: string, fieldId?: string, resourceContext?: boolean }} FieldMapping */
/** @typedef {{ name: string, fieldMappings: FieldMapping[] }} MappingGroup */

/** @type {MappingGroup[]} */
let groups = [];
/** Configured categories; null when they could not be read (then ids are typed). @type {Array<{ stableId: string, name: string, fields: Array<{ stableId: string, name: string }> }> | null} */
let categories = null;
/** @type {number | null} */
let revision = null;
/** The group being edited: a copy, and whether it is stored already. @type {{ group: MappingGroup, saved: boolean } | null} */
let editing = null;
/** Set when this page moves to another group itself, so that its own message stays. */
let keepMessages = false;

const list = h("nav", { class: "sections", "aria-label": "Mapping groups" });
const content = h("section", { class: "content" });
page.main.append(h("h1", { text: "Mapping groups" }), h("div", { class: "two-columns" }, list, content));

async function load() {
  const answer = await api("/mapping/groups");
  groups = answer.body.groups;
  revision = answer.revision;
  try {
    // The categories are the configuration's: readable when these credentials also open /config.
    categories = (await api("/config/categories", { askToSignIn: false })).body.categories;
  } catch (error) {
    categories = null;
    if (error instanceof ApiError && error.authUnavailable) page.fail(error);
  }
}

/** The fields whose value identifies the user, in mapping order. @param {MappingGroup} group */
function resolvingFields(group) {
  return group.fieldMappings.filter((m) => m.resourceContext === true).map((m) => m.recordField);
}

function drawList() {
  replace(
    list,
    h("p", { class: "revision", text: revision === null ? "" : `Configuration revision ${revision}` }),
    h(
      "ul",
      {},
      groups.map((group) =>
        h(
          "li",
          {},
          h("a", {
            href: `#group=${encodeURIComponent(group.name)}`,
            "aria-current": editing?.saved && editing.group.name === group.name ? "page" : undefined,
            text: group.name,
          }),
        ),
      ),
      h("li", {}, h("a", { href: "#new", "aria-current": editing && !editing.saved ? "page" : undefined, text: "+ New mapping group" })),
    ),
  );
}

function showOverview() {
  replace(
    content,
    h("h2", { text: "All mapping groups" }),
    h("p", {
      class: "about",
      text: "A mapping group names, for each record field of a datastore, file or API, the category field it holds. Record fields mapped to no category are emptied in redacted results; the fields marked as resolving the user say whose data a record is.",
    }),
    groups.length === 0
      ? h("p", { text: "No mapping groups yet." })
      : h(
          "table",
          {},
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col", text: "Group" }),
              h("th", { scope: "col", class: "number", text: "Record fields" }),
              h("th", { scope: "col", text: "User resolved from" }),
            ),
          ),
          h(
            "tbody",
            {},
            groups.map((group) =>
              h(
                "tr",
                {},
                h("td", {}, h("a", { href: `#group=${encodeURIComponent(group.name)}`, text: group.name })),
                h("td", { class: "number", text: String(group.fieldMappings.length) }),
                h(
                  "td",
                  {},
                  resolvingFields(group).length
                    ? resolvingFields(group).map((f) => h("span", { class: "badge context", text: f }))
                    : h("span", { class: "empty-cell", text: "nothing: every record would be dropped" }),
                ),
              ),
            ),
          ),
        ),
    h("p", {}, h("a", { href: "#new", text: "Create a mapping group" })),
  );
}

/** @param {string} categoryId */
function fieldsOf(categoryId) {
  return categories?.find((c) => c.stableId === categoryId)?.fields ?? [];
}

/** The wrapper of one cell's input, with the slot for its problems. @param {string} path @param {HTMLElement} control @param {string} errorId */
function cell(path, control, errorId) {
  return h("td", {}, h("div", { class: "field", "data-path": path }, control, h("p", { class: "field-error", id: errorId, hidden: true })));
}

function showEditor() {
  if (!editing) return showOverview();
  const { group, saved } = editing;
  const summary = h("div", {});
  const resolving = h("div", { class: "resolving", "aria-live": "polite" });
  const rows = h("tbody", {});

  const drawResolving = () => {
    const fields = resolvingFields(group);
    replace(
      resolving,
      h("h3", { text: "Who each record belongs to" }),
      fields.length
        ? h(
            "p",
            {},
            "The user is the first non-empty value among: ",
            fields.map((f, i) => [i ? ", " : "", h("span", { class: "badge context", text: f })]),
            ". A record where they are all empty is dropped.",
          )
        : h("p", {
            class: "notice error",
            text: "No record field resolves the user: every record would be dropped (NO_USER_ID). Tick “Resolves the user” on the field that holds the user id.",
          }),
    );
  };

  const drawRows = () => {
    replace(
      rows,
      group.fieldMappings.map((mapping, index) => {
        const base = `/fieldMappings/${index}`;
        const ids = { record: uid("record"), category: uid("category"), field: uid("field"), context: uid("context") };
        const fieldSelectCell = h("td", {});
        const drawFieldSelect = () => {
          const error = `${ids.field}-error`;
          const fields = fieldsOf(mapping.categoryId ?? "").map((f) => ({ value: f.stableId, label: `${f.name} (${f.stableId})` }));
          const control = categories
            ? optionalSelect({
                id: ids.field,
                errorId: error,
                label: `Field of record field ${index + 1}`,
                choices: fields,
                target: mapping,
                key: "fieldId",
                none: mapping.categoryId ? "(the category; no field named)" : "(no category)",
                unknown: "not in this category",
                disabled: !mapping.categoryId,
              })
            : textInput(ids.field, error, `Field id of record field ${index + 1}`, mapping, "fieldId");
          replace(fieldSelectCell, cell(`${base}/fieldId`, control, error).firstChild);
        };
        drawFieldSelect();
        const categoryError = `${ids.category}-error`;
        const categoryControl = categories
          ? optionalSelect({
              id: ids.category,
              errorId: categoryError,
              label: `Category of record field ${index + 1}`,
              choices: categories.map((c) => ({ value: c.stableId, label: `${c.name} (${c.stableId})` })),
              target: mapping,
              key: "categoryId",
              none: "(none: emptied in results)",
              unknown: "unknown",
              // A field of another category no longer fits.
              // biome-ignore lint/suspicious/noThenProperty: a form rule's "then" step, never awaited
              then: (value) => {
                if (mapping.fieldId && !fieldsOf(value).some((f) => f.stableId === mapping.fieldId)) delete mapping.fieldId;
                drawFieldSelect();
              },
            })
          : textInput(ids.category, categoryError, `Category id of record field ${index + 1}`, mapping, "categoryId");
        const recordError = `${ids.record}-error`;
        return h(
          "tr",
          { "data-path": base },
          cell(`${base}/recordField`, textInput(ids.record, recordError, `Record field ${index + 1}`, mapping, "recordField", true), recordError),
          cell(`${base}/categoryId`, categoryControl, categoryError),
          fieldSelectCell,
          h(
            "td",
            {},
            h(
              "div",
              { class: "field inline", "data-path": `${base}/resourceContext` },
              h("input", {
                id: ids.context,
                type: "checkbox",
                checked: mapping.resourceContext === true,
                onchange: (/** @type {Event} */ e) => {
                  if (/** @type {HTMLInputElement} */ (e.target).checked) mapping.resourceContext = true;
                  else delete mapping.resourceContext;
                  drawResolving();
                },
              }),
              h("label", { for: ids.context, text: "Resolves the user" }),
            ),
          ),
          h(
            "td",
            {},
            h("button", {
              type: "button",
              class: "remove",
              text: "Remove",
              "aria-label": `Remove record field ${mapping.recordField || index + 1}`,
              onclick: () => {
                group.fieldMappings.splice(index, 1);
                drawRows();
                drawResolving();
              },
            }),
          ),
        );
      }),
    );
  };
  drawRows();
  drawResolving();

  const nameId = uid("group-name");
  const form = h(
    "form",
    { class: "mapping-form", novalidate: true },
    h(
      "div",
      { class: "field", "data-path": "/name" },
      h("label", { for: nameId, text: "Group name" }),
      h("input", {
        id: nameId,
        value: group.name,
        readOnly: saved,
        required: true,
        "aria-describedby": `${nameId}-hint ${nameId}-error`,
        oninput: (/** @type {Event} */ e) => (group.name = /** @type {HTMLInputElement} */ (e.target).value),
      }),
      h("p", {
        class: "hint",
        id: `${nameId}-hint`,
        text: saved
          ? "The name is the group's identity (redaction requests and exports name it): it does not change."
          : "Redaction requests (mappingGroup) and exports (resolverGroup) name the group by it.",
      }),
      h("p", { class: "field-error", id: `${nameId}-error`, hidden: true }),
    ),
    h(
      "fieldset",
      { class: "list", "data-path": "/fieldMappings" },
      h("legend", { text: "Field mappings" }),
      h("p", { class: "field-error", hidden: true }),
      categories
        ? null
        : h("p", { class: "notice info", text: "The configured categories could not be read with these credentials: type category and field ids." }),
      h(
        "table",
        { class: "mappings" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Record field", "Category", "Field", "User", ""].map((t) => h("th", { scope: "col", text: t })),
          ),
        ),
        rows,
      ),
      h("button", {
        type: "button",
        class: "add",
        text: "Add field mapping",
        onclick: () => {
          group.fieldMappings.push({ recordField: "" });
          drawRows();
          /** @type {HTMLElement | null} */ (rows.lastElementChild?.querySelector("input") ?? null)?.focus();
        },
      }),
    ),
    resolving,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit", class: "primary", text: saved ? "Save mapping group" : "Create mapping group", "data-needs": "mapping:write" }),
      saved ? deleteButton(group.name, summary) : null,
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await save(group, form, summary);
  });
  replace(content, h("h2", { text: saved ? `Mapping group ${group.name}` : "New mapping group" }), summary, form);
}

/**
 * A select bound to the optional `target[key]`: "none" leaves the key out; a value that is not
 * among the choices stays, marked.
 * @param {{ id: string, errorId: string, label: string, choices: Array<{ value: string, label: string }>, target: any, key: string, none: string, unknown: string, disabled?: boolean, then?: (value: string) => void }} options
 */
function optionalSelect({ id, errorId, label, choices, target, key, none, unknown, disabled, then }) {
  const current = target[key];
  return h(
    "select",
    {
      id,
      "aria-describedby": errorId,
      "aria-label": label,
      disabled,
      onchange: (/** @type {Event} */ e) => {
        const value = /** @type {HTMLSelectElement} */ (e.target).value;
        if (value) target[key] = value;
        else delete target[key];
        then?.(value);
      },
    },
    h("option", { value: "", text: none }),
    choices.map((c) => h("option", { value: c.value, text: c.label, selected: c.value === current })),
    current && !choices.some((c) => c.value === current) ? h("option", { value: current, text: `${current} (${unknown})`, selected: true }) : null,
  );
}

/**
 * A text input bound to `target[key]` (optional keys are left out when empty).
 * @param {string} id @param {string} errorId @param {string} label @param {any} target @param {string} key @param {boolean} [required]
 */
function textInput(id, errorId, label, target, key, required = false) {
  return h("input", {
    id,
    value: target[key] ?? "",
    required,
    spellcheck: false,
    "aria-label": label,
    "aria-describedby": errorId,
    oninput: (/** @type {Event} */ e) => {
      const value = /** @type {HTMLInputElement} */ (e.target).value;
      if (value === "" && !required) delete target[key];
      else target[key] = value;
    },
  });
}

/** Deleting takes two presses: the first asks, the second deletes. @param {string} name @param {HTMLElement} summary */
function deleteButton(name, summary) {
  let armed = false;
  const button = h("button", {
    type: "button",
    class: "remove",
    text: "Delete mapping group",
    "data-needs": "mapping:write",
    onclick: async () => {
      if (!armed) {
        armed = true;
        button.textContent = `Press again to delete ${name}`;
        return;
      }
      try {
        const answer = await api(`/mapping/groups/${encodeURIComponent(name)}`, {
          method: "DELETE",
          headers: revision === null ? {} : { "if-match": `"${revision}"` },
        });
        page.say(`Deleted mapping group ${name}: revision ${answer.body.revision}.`, "ok");
        editing = null;
        await load();
        if (location.hash) {
          keepMessages = true;
          location.hash = "";
        } else route();
      } catch (error) {
        armed = false;
        button.textContent = "Delete mapping group";
        if (error instanceof ApiError && error.code === "ERR_CONFIG_REVISION_MISMATCH")
          page.say("Not deleted: the configuration changed since this page loaded it. Reload the page and try again.", "error");
        else if (error instanceof ApiError && error.problems.length)
          replace(summary, problemSummary(`${name} is still in use; nothing was deleted`, error.problems));
        else page.fail(error);
      }
    },
  });
  return button;
}

/**
 * PUT /mapping/groups/ with If-Match; problems are shown at their inputs (paths in the body,
 * or in the complete configuration for consistency problems).
 * @param {MappingGroup} group @param {HTMLElement} form @param {HTMLElement} summary
 */
async function save(group, form, summary) {
  replace(summary);
  clearProblems(form);
  // Where the group will be in the complete configuration: its place, or the end when new.
  const existing = groups.findIndex((g) => g.name === group.name);
  const index = existing >= 0 ? existing : groups.length;
  try {
    const answer = await api("/mapping/groups/", { method: "PUT", json: group, headers: revision === null ? {} : { "if-match": `"${revision}"` } });
    page.say(
      answer.body.changed
        ? `Saved mapping group ${group.name}: revision ${answer.body.revision}.`
        : `Mapping group ${group.name} is already as shown (revision ${answer.body.revision}).`,
      "ok",
    );
    await load();
    const name = group.name;
    editing = null;
    if (location.hash === `#group=${encodeURIComponent(name)}`) route();
    else {
      keepMessages = true;
      location.hash = `group=${encodeURIComponent(name)}`;
    }
  } catch (error) {
    if (error instanceof ApiError && error.problems.length) {
      const prefix = `/mappingGroups/${index}`;
      const problems = error.problems.map((p) => ({
        path: error.code === "ERR_CONFIG_INVALID" && (p.path === prefix || p.path.startsWith(`${prefix}/`)) ? p.path.slice(prefix.length) || "/" : p.path,
        problem: p.problem,
      }));
      const { placed, unplaced } = placeProblems(form, problems);
      const all = [...placed, ...unplaced];
      replace(summary, problemSummary(`${all.length} problem${all.length === 1 ? "" : "s"}: nothing was saved`, all));
      /** @type {HTMLElement | null} */ (placed[0]?.element.querySelector("input, select") ?? null)?.focus();
      return;
    }
    if (error instanceof ApiError && error.code === "ERR_CONFIG_REVISION_MISMATCH") {
      page.say("Not saved: the configuration changed since this page loaded it. Reload the page to see the current groups.", "error");
      return;
    }
    page.fail(error);
  }
}

function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  if (hash === "new") {
    if (!editing || editing.saved) editing = { group: { name: "", fieldMappings: [{ recordField: "", resourceContext: true }] }, saved: false };
  } else if (hash.startsWith("group=")) {
    const name = hash.slice("group=".length);
    const group = groups.find((g) => g.name === name);
    editing = group ? { group: structuredClone(group), saved: true } : null;
    if (!group) page.say(`There is no mapping group ${name}.`, "error");
  } else editing = null;
  drawList();
  showEditor();
}

async function start() {
  try {
    await load();
  } catch (error) {
    page.fail(error);
    replace(content, h("p", {}, "The mapping groups could not be read. ", h("button", { type: "button", text: "Try again", onclick: start })));
    return;
  }
  route();
}

window.addEventListener("hashchange", () => {
  if (!keepMessages) page.clearMessages();
  keepMessages = false;
  route();
});
void start();
