// @ts-check
/** Small DOM helpers: elements are built with h(), never from HTML strings (no injection of data as markup). */

/**
 * An element with properties, attributes and children.
 * - `class`, `text`, `for` (htmlFor) and `on*` handlers are recognised;
 * - keys containing a dash (`data-path`, `aria-invalid`) and `role` become attributes;
 * - anything else is set as a property (value, checked, type, id, disabled, ...).
 * Children may be nodes, strings, numbers, null/undefined/false (skipped) or nested arrays.
 * @param {string} tag
 * @param {Record<string, unknown>} [props]
 * @param {...unknown} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = String(value);
    else if (key === "text") el.textContent = String(value);
    else if (key === "for") /** @type {HTMLLabelElement} */ (el).htmlFor = String(value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    else if (key.includes("-") || key === "role") el.setAttribute(key, value === true ? "" : String(value));
    else {
      const properties = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (el));
      properties[key] = value;
    }
  }
  append(el, children);
  return el;
}

/** @param {Node} el @param {unknown[]} children */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** @param {Node} el */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** @param {Node} el @param {...unknown} children */
export function replace(el, ...children) {
  clear(el);
  append(el, children);
}

let counter = 0;
/** A document-unique id, to tie labels and descriptions to their inputs. @param {string} prefix */
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** A whole number of bytes as text (KiB, MiB...). @param {number} bytes */
export function formatBytes(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** Saves a Blob as a file through a temporary object URL. @param {Blob} blob @param {string} name */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name, class: "hidden" });
  document.body.appendChild(link);
  link.click();
  link.remove();
  // Released once the browser has surely taken the download over; until then the Blob stays in memory.
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}
