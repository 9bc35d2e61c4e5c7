// @ts-check
/** The frame every UI page shares: header with navigation and sign-in state, and a message area. */
import { currentCredentials, onCredentialsChange, signIn, signOut } from "./auth.js";
import { h, replace } from "./dom.js";
import { ApiError, holds, onPermissionsChange } from "./api.js";

const pages = [
  { id: "config", href: "/config/", text: "Configuration" },
  { id: "mapping", href: "/mapping/", text: "Mapping groups" },
  { id: "redact", href: "/redact/", text: "Redaction" },
  { id: "user", href: "/user/", text: "Access report" },
];

/**
 * @param {{ current: "config" | "mapping" | "redact" | "user" }} options
 */
export function startPage({ current }) {
  const header = /** @type {HTMLElement} */ (document.getElementById("site-header"));
  const main = /** @type {HTMLElement} */ (document.getElementById("main"));
  const account = h("div", { class: "account" });
  replace(
    header,
    h("span", { class: "brand", text: "warden" }),
    h(
      "nav",
      { "aria-label": "Web UIs" },
      h(
        "ul",
        {},
        pages.map((p) => h("li", {}, h("a", { href: p.href, text: p.text, "aria-current": p.id === current ? "page" : undefined }))),
      ),
    ),
    account,
  );
  const renderAccount = () => {
    const credentials = currentCredentials();
    replace(
      account,
      h("span", { class: "who", text: credentials ? `Signed in: ${credentials.who}` : "Not signed in" }),
      credentials
        ? h("button", { type: "button", text: "Sign out", onclick: () => signOut() })
        : h("button", { type: "button", text: "Sign in", onclick: () => signIn() }),
    );
  };
  renderAccount();
  onCredentialsChange(renderAccount);

  const messages = h("div", { class: "messages", role: "status", "aria-live": "polite" });
  main.prepend(messages);

  /** @param {string} text @param {"info" | "ok" | "error" | "auth-unavailable"} [kind] */
  const say = (text, kind = "info") => {
    replace(messages, h("p", { class: `notice ${kind}`, text }));
  };
  /** Shows a failure: the credentials check being unavailable is told apart from everything else. @param {unknown} error */
  const fail = (error) => say(...describeError(error));
  const clearMessages = () => replace(messages);
  disableWhatIsNotHeld(main);
  return { main, say, fail, clearMessages };
}

/**
 * Controls marked `data-needs="component:action"` are disabled, with the reason as their title,
 * while the signed-in caller does not hold that permission; forms are built after the page
 * starts, so every change of the page is looked at.
 * @param {HTMLElement} root
 */
function disableWhatIsNotHeld(root) {
  const apply = () => {
    for (const control of root.querySelectorAll("[data-needs]")) {
      const needed = control.getAttribute("data-needs") ?? "";
      const allowed = holds(needed);
      const button = /** @type {HTMLButtonElement} */ (control);
      if (!allowed && !button.disabled) {
        button.disabled = true;
        button.title = `You are not allowed to do this (it needs ${needed})`;
        button.dataset.deniedBy = needed;
      } else if (allowed && button.dataset.deniedBy) {
        button.disabled = false;
        button.removeAttribute("title");
        delete button.dataset.deniedBy;
      }
    }
  };
  new MutationObserver(apply).observe(root, { childList: true, subtree: true });
  onPermissionsChange(apply);
}

/**
 * A failure as a sentence and its kind of notice.
 * @param {unknown} error
 * @returns {[string, "error" | "auth-unavailable"]}
 */
export function describeError(error) {
  if (error instanceof ApiError) {
    if (error.authUnavailable)
      return [
        "The service could not check your credentials right now (the directory or identity provider did not answer). Nothing was done; try again in a moment.",
        "auth-unavailable",
      ];
    if (error.status === 401) return [`Not signed in: ${error.message}. Use "Sign in" at the top of the page.`, "error"];
    if (error.code === "ERR_AUTH_FORBIDDEN")
      return [
        `Not allowed: you are signed in, but ${error.message.replace(/^this caller does not hold/, "you do not hold")}. Nothing was done; an administrator can grant it (docs/authorization.md).`,
        "error",
      ];
    return [`${error.message} (${error.code})`, "error"];
  }
  return [error instanceof Error ? error.message : String(error), "error"];
}
