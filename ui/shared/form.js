// @ts-check
/**
 * Forms drawn from the policy's JSON schema (served as shared/policy-schema.json, the same
 * schema the API validates with), so every section of the configuration is editable without
 * a hand-written form per section. Inputs edit a plain object in place; each input's wrapper
 * carries `data-path`, the JSON pointer of its value in the complete configuration, which is
 * where the API's validation problems (`details[].path`) are shown.
 */
import { h, replace, uid } from "./dom.js";

/** @typedef {{ value: string, label: string }} Option */

/**
 * @typedef {object} FormContext
 * @property {(name: string, path: string, parent: any) => Option[] | undefined} options choices for a reference property, or undefined when it is free text
 * @property {(path: string, parent: any) => boolean} [locked] whether an input may not change (a saved item's stableId)
 * @property {(path: string, parent: any[], index: number) => Promise<boolean>} [removeItem] removal of a list item: true when the caller removed it itself (e.g. a DELETE call)
 * @property {(path: string, item: any) => string | undefined} [removeLabel] the remove button's text for an item, when not "Remove"
 * @property {(path: string, item: any) => string | undefined} [removeNeeds] the permission removing an item needs (`component:action`), when it acts on the server
 * @property {(path: string) => boolean} [collapsed] whether a list item starts collapsed
 * @property {() => void} [changed] told after every edit
 */

const labels = {
  stableId: "Stable id",
  name: "Name",
  summary: "Summary",
  fullDetails: "Full details",
  fields: "Fields",
  categoryIds: "Categories",
  optIn: "Opt-in (absent: core purpose)",
  propertyName: "User attribute",
  values: "Values",
  allowedPurposeIds: "Purposes still allowed",
  serviceProvider: "Service provider",
  platformUsePurposeId: "Linked platform use purpose",
  categoryCeilingIds: "Category ceiling",
  thirdParties: "Third parties",
  thresholdAge: "Threshold age (a child is under it)",
  allowedToDisable: "Flows a guardian may turn off",
  purposeId: "Sharing purpose",
  thirdPartyIds: "Third parties",
  terms: "Terms",
  contractAccessCategoryIds: "Categories the contract party may access",
  platformUsePurposeIds: "Platform use purposes allowed",
  platformSharingPurposeIds: "Platform sharing purposes allowed",
  requestedCategoryIds: "Requested categories",
  purposes: "Purposes",
  overrides: "Overrides",
  categories: "Categories",
  recordField: "Record field",
  categoryId: "Category",
  fieldId: "Field",
  resourceContext: "Resolves the user",
  fieldMappings: "Field mappings",
};

const singular = {
  fields: "field",
  thirdParties: "third party",
  terms: "terms entry",
  allowedToDisable: "flow",
  purposes: "purpose",
  overrides: "override",
  categories: "category",
  fieldMappings: "field mapping",
};

const hints = {
  values: "Comma-separated. Age: one whole number, users under it match. Location: region codes such as US, EU or US-CA.",
  optIn: "An opt-in purpose applies only once the user has opted in.",
  stableId: "Letters, digits, '.', '-' and '_'. It never changes once saved.",
};

/** @param {string} name */
export function labelOf(name) {
  return /** @type {Record<string, string>} */ (labels)[name] ?? name.replace(/([A-Z])/g, " $1").replace(/^./, (c) => c.toUpperCase());
}

/** The last segment of a JSON pointer. @param {string} path */
function lastSegment(path) {
  return path
    .slice(path.lastIndexOf("/") + 1)
    .replace(/~1/g, "/")
    .replace(/~0/g, "~");
}

/** A JSON pointer segment. @param {string | number} key */
export function pointerSegment(key) {
  return String(key).replace(/~/g, "~0").replace(/\//g, "~1");
}

/** A new value that has every required property of `schema`. @param {any} schema @returns {any} */
export function defaultValue(schema) {
  const branch = objectBranch(schema);
  if (branch.type === "object") {
    /** @type {Record<string, unknown>} */
    const value = {};
    for (const name of branch.required ?? []) value[name] = defaultValue(branch.properties[name]);
    return value;
  }
  if (branch.type === "array") return [];
  if (branch.type === "boolean") return false;
  if (branch.type === "integer" || branch.type === "number") return branch.minimum ?? 0;
  if (Array.isArray(branch.enum)) return branch.enum[0];
  return "";
}

/** The object branch of `anyOf: [null, object]` (guardian rights). @param {any} schema */
export function objectBranch(schema) {
  if (Array.isArray(schema?.anyOf)) return schema.anyOf.find((s) => s.type !== "null") ?? schema.anyOf[0];
  return schema;
}

/** A heading for a list item. @param {any} item @param {number} index */
function itemTitle(item, index) {
  if (item && typeof item === "object") {
    const text = [item.name, item.stableId && item.name !== item.stableId ? `(${item.stableId})` : null, item.recordField].filter(Boolean).join(" ");
    if (text) return text;
  }
  return `New item ${index + 1}`;
}

/**
 * The wrapper of one input: its label, the input, a hint, and the slot where problems appear.
 * @param {string} path
 * @param {string} label
 * @param {(id: string, describedBy: string) => HTMLElement} input
 * @param {{ hint?: string, inline?: boolean }} [options]
 */
function field(path, label, input, options = {}) {
  const id = uid("input");
  const errorId = `${id}-error`;
  const hintId = options.hint ? `${id}-hint` : "";
  const control = input(id, [hintId, errorId].filter(Boolean).join(" "));
  const labelEl = h("label", { for: id, text: label });
  return h(
    "div",
    { class: options.inline ? "field inline" : "field", "data-path": path },
    options.inline ? [control, labelEl] : [labelEl, control],
    options.hint ? h("p", { class: "hint", id: hintId, text: options.hint }) : null,
    h("p", { class: "field-error", id: errorId, hidden: true }),
  );
}

/**
 * The inputs of an object's properties, in the schema's order; the texts for the personalized
 * terms (summary, full details) folded together, open when they hold something.
 * @param {any} schema @param {any} value @param {string} path @param {FormContext} ctx
 * @returns {HTMLElement[]}
 */
export function objectFields(schema, value, path, ctx) {
  const s = objectBranch(schema);
  const drawn = Object.entries(s.properties).map(([prop, propSchema]) => ({
    prop,
    el: editor(propSchema, value, prop, `${path}/${pointerSegment(prop)}`, ctx, { required: (s.required ?? []).includes(prop) }),
  }));
  const texts = drawn.filter((d) => d.prop === "summary" || d.prop === "fullDetails");
  if (texts.length === 0) return drawn.map((d) => d.el);
  const folded = h(
    "details",
    { class: "texts", open: texts.some((d) => value?.[d.prop]) },
    h("summary", { text: "Summary and full details (shown in the personalized terms)" }),
    texts.map((d) => d.el),
  );
  const at = drawn.indexOf(texts[0]);
  const rest = drawn.filter((d) => !texts.includes(d)).map((d) => d.el);
  rest.splice(at, 0, folded);
  return rest;
}

/**
 * A group of inputs (object, list, choice of references) with its legend and problem slot.
 * @param {string} path
 * @param {string} legend
 * @param {string} className
 * @param {...unknown} children
 */
function group(path, legend, className, ...children) {
  const errorId = uid("group-error");
  return h(
    "fieldset",
    { class: className, "data-path": path, "aria-describedby": errorId },
    h("legend", { text: legend }),
    h("p", { class: "field-error", id: errorId, hidden: true }),
    ...children,
  );
}

/**
 * An editor for `holder[key]`, described by `schema`, at JSON pointer `path`.
 * @param {any} schema
 * @param {any} holder
 * @param {string | number} key
 * @param {string} path
 * @param {FormContext} ctx
 * @param {{ required?: boolean, label?: string }} [options]
 * @returns {HTMLElement}
 */
export function editor(schema, holder, key, path, ctx, options = {}) {
  const name = lastSegment(path);
  const label = options.label ?? labelOf(name);
  const required = options.required ?? true;
  const changed = () => ctx.changed?.();
  const locked = ctx.locked?.(path, holder) ?? false;
  const s = objectBranch(schema);

  if (s.type === "object") {
    return group(path, label, "object", objectFields(s, holder[key], path, ctx));
  }

  if (s.type === "array" && objectBranch(s.items).type === "object") return listEditor(s, holder, key, path, ctx, label);

  if (s.type === "array") {
    const choices = ctx.options(name, path, holder);
    if (!choices) {
      // Free values (override values): one text input, comma-separated.
      return field(
        path,
        label,
        (id, describedBy) =>
          h("input", {
            id,
            "aria-describedby": describedBy,
            value: (holder[key] ?? []).join(", "),
            oninput: (/** @type {Event} */ e) => {
              const text = /** @type {HTMLInputElement} */ (e.target).value;
              holder[key] = text
                .split(",")
                .map((v) => v.trim())
                .filter((v) => v !== "");
              changed();
            },
          }),
        { hint: /** @type {Record<string, string>} */ (hints)[name] },
      );
    }
    return referenceChoice(s, holder, key, path, ctx, label, choices, required);
  }

  if (s.type === "boolean") {
    return field(
      path,
      label,
      (id, describedBy) =>
        h("input", {
          id,
          type: "checkbox",
          "aria-describedby": describedBy,
          checked: holder[key] === true,
          disabled: locked,
          onchange: (/** @type {Event} */ e) => {
            const checked = /** @type {HTMLInputElement} */ (e.target).checked;
            // An optional flag that is off is left out (optIn: absent means core).
            if (!checked && !required) delete holder[key];
            else holder[key] = checked;
            changed();
          },
        }),
      { inline: true, hint: /** @type {Record<string, string>} */ (hints)[name] },
    );
  }

  if (s.type === "integer" || s.type === "number") {
    return field(path, label, (id, describedBy) =>
      h("input", {
        id,
        type: "number",
        "aria-describedby": describedBy,
        step: s.type === "integer" ? 1 : "any",
        min: s.minimum,
        max: s.maximum,
        value: holder[key] ?? "",
        oninput: (/** @type {Event} */ e) => {
          const text = /** @type {HTMLInputElement} */ (e.target).value;
          // Left as text when it is not a number: the API says what is wrong, next to this input.
          holder[key] = text === "" || Number.isNaN(Number(text)) ? text : Number(text);
          changed();
        },
      }),
    );
  }

  const enumValues = Array.isArray(s.enum) ? s.enum.map((v) => ({ value: String(v), label: String(v) })) : undefined;
  const choices = enumValues ?? ctx.options(name, path, holder);
  if (choices) {
    const current = holder[key];
    const known = choices.some((c) => c.value === current);
    return field(path, label, (id, describedBy) =>
      h(
        "select",
        {
          id,
          "aria-describedby": describedBy,
          disabled: locked,
          onchange: (/** @type {Event} */ e) => {
            const value = /** @type {HTMLSelectElement} */ (e.target).value;
            if (value === "" && !required) delete holder[key];
            else holder[key] = value;
            changed();
          },
        },
        !required || current === undefined || current === ""
          ? h("option", { value: "", text: required ? "(choose)" : "(none)", selected: current === undefined || current === "" })
          : null,
        choices.map((c) => h("option", { value: c.value, text: c.label, selected: c.value === current })),
        current !== undefined && current !== "" && !known ? h("option", { value: current, text: `${current} (unknown)`, selected: true }) : null,
      ),
    );
  }

  const long = (s.maxLength ?? 0) > 2_000;
  return field(
    path,
    label,
    (id, describedBy) =>
      h(long ? "textarea" : "input", {
        id,
        "aria-describedby": describedBy,
        rows: long ? 3 : undefined,
        value: holder[key] ?? "",
        readOnly: locked,
        required: required && !locked,
        spellcheck: name === "stableId" ? false : undefined,
        oninput: (/** @type {Event} */ e) => {
          const value = /** @type {HTMLInputElement} */ (e.target).value;
          if (value === "" && !required) delete holder[key];
          else holder[key] = value;
          changed();
        },
      }),
    { hint: locked ? "Saved: a stable id never changes." : name === "stableId" ? hints.stableId : undefined },
  );
}

/**
 * Checkboxes for a list of references (categories, purposes, third parties). An optional list
 * (a third party's narrower categories) can be left out altogether: absent is not empty.
 * @param {any} schema @param {any} holder @param {string | number} key @param {string} path
 * @param {FormContext} ctx @param {string} label @param {Option[]} choices @param {boolean} required
 */
function referenceChoice(schema, holder, key, path, ctx, label, choices, required) {
  const box = h("div", { class: "choices" });
  const draw = () => {
    const selected = /** @type {string[] | undefined} */ (holder[key]);
    if (selected === undefined) {
      replace(box);
      return;
    }
    const unknown = selected.filter((id) => !choices.some((c) => c.value === id)).map((id) => ({ value: id, label: `${id} (unknown)` }));
    replace(
      box,
      choices.length + unknown.length === 0 ? h("p", { class: "hint", text: "Nothing to choose from yet." }) : null,
      [...choices, ...unknown].map((choice) => {
        const id = uid("choice");
        return h(
          "div",
          { class: "choice" },
          h("input", {
            id,
            type: "checkbox",
            value: choice.value,
            checked: selected.includes(choice.value),
            onchange: (/** @type {Event} */ e) => {
              const on = /** @type {HTMLInputElement} */ (e.target).checked;
              const current = /** @type {string[]} */ (holder[key] ?? []);
              const next = on ? [...current, choice.value] : current.filter((v) => v !== choice.value);
              // Keep the order of the choices, unknown ids last.
              const order = [...choices, ...unknown].map((c) => c.value);
              holder[key] = next.sort((a, b) => order.indexOf(a) - order.indexOf(b));
              ctx.changed?.();
            },
          }),
          h("label", { for: id, text: choice.label }),
        );
      }),
    );
  };
  draw();
  const toggle = required
    ? null
    : h(
        "div",
        { class: "choice" },
        h("input", {
          id: uid("narrow"),
          type: "checkbox",
          checked: holder[key] !== undefined,
          onchange: (/** @type {Event} */ e) => {
            if (/** @type {HTMLInputElement} */ (e.target).checked) holder[key] = [];
            else delete holder[key];
            draw();
            ctx.changed?.();
          },
        }),
      );
  if (toggle) toggle.append(h("label", { for: /** @type {HTMLElement} */ (toggle.firstChild).id, text: "Choose a narrower set (otherwise all)" }));
  void schema;
  return group(path, label, "references", toggle, box);
}

/**
 * A list of objects: each item in its own group with a remove button, and an add button.
 * @param {any} schema @param {any} holder @param {string | number} key @param {string} path @param {FormContext} ctx @param {string} label
 */
function listEditor(schema, holder, key, path, ctx, label) {
  const name = lastSegment(path);
  const items = h("div", { class: "items" });
  const draw = () => {
    const list = /** @type {any[]} */ (holder[key] ?? (holder[key] = []));
    replace(
      items,
      list.length === 0 ? h("p", { class: "hint", text: "None yet." }) : null,
      list.map((item, index) => {
        const itemPath = `${path}/${index}`;
        const body = editor(schema.items, list, index, itemPath, ctx, { label: itemTitle(item, index) });
        const removeText = ctx.removeLabel?.(itemPath, item) ?? `Remove ${/** @type {Record<string, string>} */ (singular)[name] ?? "item"}`;
        const remove = h("button", {
          type: "button",
          class: "remove",
          text: removeText,
          "data-needs": ctx.removeNeeds?.(itemPath, item),
          onclick: async () => {
            const handled = (await ctx.removeItem?.(itemPath, list, index)) ?? false;
            if (!handled) {
              list.splice(index, 1);
              ctx.changed?.();
            }
            draw();
          },
        });
        body.append(h("div", { class: "item-actions" }, remove));
        if (!ctx.collapsed?.(itemPath)) return body;
        // Long lists of saved items start folded: the summary names the item, the body edits it.
        body.classList.add("folded");
        return h("details", { class: "item", "data-item": itemPath }, h("summary", { text: itemTitle(item, index) }), body);
      }),
    );
  };
  draw();
  const add = h("button", {
    type: "button",
    class: "add",
    text: `Add ${/** @type {Record<string, string>} */ (singular)[name] ?? "item"}`,
    onclick: () => {
      const list = /** @type {any[]} */ (holder[key]);
      list.push(defaultValue(schema.items));
      ctx.changed?.();
      draw();
      // Focus the first input of the new item.
      const last = items.lastElementChild;
      /** @type {HTMLElement | null | undefined} */ (last?.querySelector("input, select, textarea"))?.focus();
    },
  });
  return group(path, label, "list", items, add);
}

/** Removes every problem shown under `root`. @param {HTMLElement} root */
export function clearProblems(root) {
  for (const slot of root.querySelectorAll(".field-error")) {
    slot.textContent = "";
    /** @type {HTMLElement} */ (slot).hidden = true;
  }
  for (const el of root.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  for (const el of root.querySelectorAll(".has-problem")) el.classList.remove("has-problem");
}

/**
 * Shows each problem next to the input of its path (or of the nearest enclosing path that has
 * one); returns the problems that found no place under `root`, and the elements used.
 * @param {HTMLElement} root
 * @param {Array<{ path: string, problem: string }>} problems
 * @returns {{ placed: Array<{ path: string, problem: string, element: HTMLElement }>, unplaced: Array<{ path: string, problem: string }> }}
 */
export function placeProblems(root, problems) {
  clearProblems(root);
  const placed = [];
  const unplaced = [];
  for (const problem of problems) {
    const element = targetOf(root, problem);
    if (!element) {
      unplaced.push(problem);
      continue;
    }
    const slot = /** @type {HTMLElement | null} */ (element.querySelector(":scope > .field-error"));
    if (slot) {
      slot.textContent = slot.textContent ? `${slot.textContent} ${problem.problem}.` : `${problem.problem}.`;
      slot.hidden = false;
    }
    element.classList.add("has-problem");
    const control = element.matches("fieldset") ? null : element.querySelector("input, select, textarea");
    control?.setAttribute("aria-invalid", "true");
    // Unfold every folded item around it.
    for (let at = element.parentElement; at && at !== root; at = at.parentElement) if (at instanceof HTMLDetailsElement) at.open = true;
    placed.push({ ...problem, element });
  }
  return { placed, unplaced };
}

/** @param {HTMLElement} root @param {{ path: string, problem: string }} problem */
function targetOf(root, { path, problem }) {
  const candidates = [];
  // "must have required property 'name'" is reported on the object: show it at the property when drawn.
  const missing = /required property '([^']+)'/.exec(problem);
  if (missing) candidates.push(`${path === "/" ? "" : path}/${pointerSegment(missing[1])}`);
  for (let p = path; p !== ""; p = p.slice(0, p.lastIndexOf("/"))) candidates.push(p);
  for (const candidate of candidates) {
    const found = root.querySelector(`[data-path="${CSS.escape(candidate)}"]`);
    if (found) return /** @type {HTMLElement} */ (found);
  }
  return null;
}

/**
 * A summary of problems at the top of a form: each one a button that focuses its input.
 * @param {string} title
 * @param {Array<{ path: string, problem: string, element?: HTMLElement }>} problems
 */
export function problemSummary(title, problems) {
  return h(
    "div",
    { class: "error-summary", role: "alert", tabindex: -1 },
    h("h3", { text: title }),
    h(
      "ul",
      {},
      problems.map((p) =>
        h(
          "li",
          {},
          p.element
            ? h("button", {
                type: "button",
                class: "link",
                text: `${p.path}: ${p.problem}`,
                onclick: () => {
                  const target = /** @type {HTMLElement | null} */ (p.element?.querySelector("input, select, textarea"));
                  (target ?? p.element)?.focus();
                },
              })
            : `${p.path}: ${p.problem}`,
        ),
      ),
    ),
  );
}
