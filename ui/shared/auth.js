// @ts-check
/**
 * Sign-in: the page, not the browser, asks for credentials. They are kept in sessionStorage
 * (this tab only, gone when it closes) and sent as an explicit Authorization header with
 * `credentials: "omit"`, so the browser never shows its own Basic prompt and never attaches
 * anything by itself.
 */
import { h, uid } from "./dom.js";

const storageKey = "warden.credentials";

/** Credential schemes a browser page can supply (cloud signatures need a secret key: not here). */
export const browserSchemes = ["Basic", "Bearer"];

/** @typedef {{ scheme: "Basic" | "Bearer", token: string, who: string }} Credentials */

/** @returns {Credentials | null} */
export function currentCredentials() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(storageKey) ?? "null");
    return stored && (stored.scheme === "Basic" || stored.scheme === "Bearer") && typeof stored.token === "string" ? stored : null;
  } catch {
    return null;
  }
}

/** The Authorization header value, or null when not signed in. */
export function authorizationHeader() {
  const credentials = currentCredentials();
  return credentials ? `${credentials.scheme} ${credentials.token}` : null;
}

/** @param {Credentials} credentials */
function store(credentials) {
  sessionStorage.setItem(storageKey, JSON.stringify(credentials));
  notify();
}

export function signOut() {
  sessionStorage.removeItem(storageKey);
  notify();
}

/** @type {Set<() => void>} */
const listeners = new Set();
/** Called whenever the credentials change. @param {() => void} listener */
export function onCredentialsChange(listener) {
  listeners.add(listener);
}
function notify() {
  for (const listener of listeners) listener();
}

/** Base64 of UTF-8 text (the gateway's Basic challenge says charset="UTF-8"). @param {string} text */
function base64Utf8(text) {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * The schemes of a WWW-Authenticate header (one line per challenge, or lines joined with ", "):
 * a challenge starts with a token followed by a space, a comma or the end; parameters are `name=value`.
 * @param {string | null} header
 * @returns {string[]}
 */
export function challengeSchemes(header) {
  if (!header) return [];
  const schemes = [];
  for (const match of header.matchAll(/(?:^|,)\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)(?=\s+[A-Za-z0-9!#$%&'*+.^_`|~-]+\s*=|\s*,|\s*$)/g)) schemes.push(match[1]);
  return schemes;
}

/** @type {Promise<boolean> | null} */
let openDialog = null;

/**
 * Shows the sign-in dialog; resolves true once credentials are stored, false if cancelled.
 * Concurrent callers share one dialog.
 * @param {{ schemes?: string[], message?: string }} [options]
 * @returns {Promise<boolean>}
 */
export function signIn(options = {}) {
  if (!openDialog) openDialog = showDialog(options).finally(() => (openDialog = null));
  return openDialog;
}

/** @param {{ schemes?: string[], message?: string }} options @returns {Promise<boolean>} */
function showDialog({ schemes, message }) {
  const offered = schemes?.length ? browserSchemes.filter((s) => schemes.some((o) => o.toLowerCase() === s.toLowerCase())) : browserSchemes;
  return new Promise((resolve) => {
    const ids = { title: uid("sign-in-title"), user: uid("user"), password: uid("password"), token: uid("token"), message: uid("message") };
    const current = currentCredentials();
    const choice = (scheme, text) =>
      h(
        "label",
        { class: "choice" },
        h("input", { type: "radio", name: "scheme", value: scheme, checked: (current?.scheme ?? offered[0]) === scheme, onchange: sync }),
        text,
      );
    const basicPart = h(
      "div",
      { class: "scheme-basic" },
      h(
        "div",
        { class: "field" },
        h("label", { for: ids.user, text: "User name" }),
        h("input", { id: ids.user, name: "user", autocomplete: "username", value: current?.scheme === "Basic" ? current.who : "" }),
      ),
      h(
        "div",
        { class: "field" },
        h("label", { for: ids.password, text: "Password" }),
        h("input", { id: ids.password, name: "password", type: "password", autocomplete: "current-password" }),
      ),
    );
    const bearerPart = h(
      "div",
      { class: "scheme-bearer" },
      h(
        "div",
        { class: "field" },
        h("label", { for: ids.token, text: "Bearer token" }),
        h("textarea", { id: ids.token, name: "token", rows: 4, spellcheck: false, autocomplete: "off" }),
      ),
    );
    const problem = h("p", { id: ids.message, class: "dialog-message", role: "alert", text: message ?? "" });
    const form = h(
      "form",
      { class: "sign-in", "aria-describedby": ids.message },
      h("h2", { id: ids.title, text: "Sign in" }),
      problem,
      offered.length === 0
        ? h("p", { text: `This service takes ${schemes?.join(", ") || "no"} credentials here, which this page cannot send.` })
        : [
            offered.length > 1
              ? h(
                  "fieldset",
                  { class: "schemes" },
                  h("legend", { text: "Credentials" }),
                  offered.includes("Basic") && choice("Basic", "User name and password"),
                  offered.includes("Bearer") && choice("Bearer", "Bearer token"),
                )
              : null,
            offered.includes("Basic") ? basicPart : null,
            offered.includes("Bearer") ? bearerPart : null,
          ],
      h(
        "div",
        { class: "actions" },
        offered.length ? h("button", { type: "submit", class: "primary", text: "Sign in" }) : null,
        h("button", { type: "button", text: "Cancel", onclick: () => finish(false) }),
      ),
    );
    const dialog = /** @type {HTMLDialogElement} */ (h("dialog", { class: "sign-in-dialog", "aria-labelledby": ids.title }, form));
    function selected() {
      const checked = /** @type {HTMLInputElement | null} */ (form.querySelector('input[name="scheme"]:checked'));
      return checked?.value ?? offered[0];
    }
    function sync() {
      const scheme = selected();
      basicPart.hidden = scheme !== "Basic";
      bearerPart.hidden = scheme !== "Bearer";
    }
    /** @param {boolean} ok */
    function finish(ok) {
      dialog.close();
      dialog.remove();
      resolve(ok);
    }
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const scheme = selected();
      if (scheme === "Basic") {
        const user = /** @type {HTMLInputElement} */ (form.querySelector(`#${ids.user}`)).value;
        const password = /** @type {HTMLInputElement} */ (form.querySelector(`#${ids.password}`)).value;
        if (!user || user.includes(":")) {
          problem.textContent = "Enter a user name (without ':').";
          return;
        }
        store({ scheme: "Basic", token: base64Utf8(`${user}:${password}`), who: user });
      } else {
        const token = /** @type {HTMLTextAreaElement} */ (form.querySelector(`#${ids.token}`)).value.trim().replace(/^Bearer\s+/i, "");
        if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(token)) {
          problem.textContent = "Paste the token itself (letters, digits and -._~+/ only).";
          return;
        }
        store({ scheme: "Bearer", token, who: "bearer token" });
      }
      finish(true);
    });
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      finish(false);
    });
    document.body.appendChild(dialog);
    sync();
    dialog.showModal();
    const first = /** @type {HTMLElement | null} */ (form.querySelector(selected() === "Bearer" ? "textarea" : "input:not([type=radio])"));
    first?.focus();
  });
}
