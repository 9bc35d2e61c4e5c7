// @ts-check
/**
 * /redact/: redact a document (upload with a progress bar, the job's progress, stats with a
 * chart, a preview of the first rows, download) or a single record (per field: kept or emptied,
 * and why).
 */
import { api, ApiError, askForCredentials, errorOf, request, requestHeaders } from "./shared/api.js";
import { formatBytes, h, replace, saveBlob, uid } from "./shared/dom.js";
import { onCredentialsChange } from "./shared/auth.js";
import { describeError, startPage } from "./shared/page.js";
import { droppedColors, emptiedColor, keptColor, stackedBars } from "./shared/chart.js";

const page = startPage({ current: "redact" });

const purposeTypes = [
  { value: "platformUse", label: "Platform use", at: ["platformUse", "purposes"] },
  { value: "platformSharing", label: "Platform sharing", at: ["platformSharing", "purposes"] },
  { value: "contractualExchange", label: "Contractual exchange", at: ["contractualExchange", "purposes"] },
  { value: "consentedSharing", label: "Consented sharing", at: ["consentedSharing", "purposes"] },
];
const formats = [
  { value: "text/csv", label: "CSV with a header row", extensions: [".csv"] },
  { value: "application/json", label: "JSON array of objects", extensions: [".json"] },
  { value: "application/x-ndjson", label: "NDJSON (one object per line)", extensions: [".ndjson", ".jsonl"] },
];
const previewRows = 20;
/** A preview stops reading after this much, even without enough complete rows. */
const previewByteLimit = 1024 * 1024;

/** The configuration and the mapping groups, when these credentials can read them (else ids are typed). @type {any} */
let config = null;
/** @type {Array<{ name: string, fieldMappings: Array<{ recordField: string, categoryId?: string, resourceContext?: boolean }> }> | null} */
let groups = null;

// ---- What for: type, purpose, third party or terms, mapping group ----

const ids = { type: uid("type"), purpose: uid("purpose"), thirdParty: uid("third-party"), terms: uid("terms"), group: uid("group") };
const requestBox = h("div", { class: "request-fields" });

/** The query of a redaction: purpose, type, mapping group and the optional third party or terms. */
function redactionQuery() {
  const value = (/** @type {string} */ id) => /** @type {HTMLInputElement | HTMLSelectElement | null} */ (document.getElementById(id))?.value.trim() ?? "";
  const query = new URLSearchParams({ purposeId: value(ids.purpose), type: value(ids.type), mappingGroup: value(ids.group) });
  if (value(ids.thirdParty)) query.set("thirdPartyId", value(ids.thirdParty));
  if (value(ids.terms)) query.set("termsId", value(ids.terms));
  return query;
}

/**
 * A select of choices when they are known, else a text input; tied to its label.
 * @param {string} id @param {string} label @param {Array<{ value: string, label: string }> | null} choices @param {{ optional?: boolean, onchange?: () => void, hint?: string }} [options]
 */
function choiceField(id, label, choices, options = {}) {
  const control = choices
    ? h(
        "select",
        { id, onchange: options.onchange },
        options.optional ? h("option", { value: "", text: "(none)" }) : null,
        choices.map((c) => h("option", { value: c.value, text: c.label })),
      )
    : h("input", { id, spellcheck: false, onchange: options.onchange });
  return h("div", { class: "field" }, h("label", { for: id, text: label }), control, options.hint ? h("p", { class: "hint", text: options.hint }) : null);
}

function drawRequestFields() {
  const previous = Object.fromEntries(Object.entries(ids).map(([k, id]) => [k, /** @type {HTMLInputElement | null} */ (document.getElementById(id))?.value]));
  const type = previous.type || "platformUse";
  const typeInfo = purposeTypes.find((t) => t.value === type) ?? purposeTypes[0];
  const purposes = config ? (typeInfo.at.reduce((v, k) => v?.[k], config) ?? []) : null;
  const purposeChoices = purposes ? purposes.map((/** @type {any} */ p) => ({ value: p.stableId, label: `${p.name} (${p.stableId})` })) : null;
  const purpose = purposes?.find((/** @type {any} */ p) => p.stableId === previous.purpose) ?? purposes?.[0];
  const thirdParties =
    type === "platformSharing" && purpose
      ? purpose.thirdParties.map((/** @type {any} */ t) => ({ value: t.stableId, label: `${t.name} (${t.stableId})` }))
      : null;
  const terms =
    (type === "contractualExchange" || type === "consentedSharing") && purpose
      ? purpose.terms.map((/** @type {any} */ t) => ({ value: t.stableId, label: `${t.name} (${t.stableId})` }))
      : null;
  replace(
    requestBox,
    choiceField(ids.type, "Type of purpose", purposeTypes, { onchange: drawRequestFields }),
    choiceField(ids.purpose, "Purpose", purposeChoices, { onchange: drawRequestFields }),
    type === "platformSharing" ? choiceField(ids.thirdParty, "Receiving third party", config ? (thirdParties ?? []) : null, { optional: true }) : null,
    type === "contractualExchange" || type === "consentedSharing" ? choiceField(ids.terms, "Terms", config ? (terms ?? []) : null, { optional: true }) : null,
    choiceField(ids.group, "Mapping group", groups ? groups.map((g) => ({ value: g.name, label: g.name })) : null, { onchange: drawTemplateHint }),
  );
  for (const [key, value] of Object.entries(previous)) {
    const el = /** @type {HTMLInputElement | null} */ (document.getElementById(/** @type {Record<string, string>} */ (ids)[key]));
    if (
      el &&
      value !== undefined &&
      (el.tagName !== "SELECT" || [.../** @type {HTMLSelectElement} */ (/** @type {unknown} */ (el)).options].some((o) => o.value === value))
    )
      el.value = value;
  }
  drawTemplateHint();
}

// ---- Document ----

const fileId = uid("file");
const formatId = uid("format");
const uploadBar = /** @type {HTMLProgressElement} */ (h("progress", { id: uid("upload-progress"), max: 100, value: 0 }));
const jobBar = /** @type {HTMLProgressElement} */ (h("progress", { id: uid("job-progress"), max: 100, value: 0 }));
const uploadText = h("span", { class: "progress-text" });
const jobText = h("span", { class: "progress-text" });
const progressBox = h(
  "div",
  { class: "progress", hidden: true },
  h("div", { class: "progress-row" }, h("label", { for: uploadBar.id, text: "Upload" }), uploadBar, " ", uploadText),
  h("div", { class: "progress-row" }, h("label", { for: jobBar.id, text: "Redaction" }), jobBar, " ", jobText),
);
const resultBox = h("div", { class: "result", "aria-live": "polite" });
const jobsBox = h("div", { class: "jobs" });
const uploadButton = /** @type {HTMLButtonElement} */ (
  h("button", { type: "submit", class: "primary", text: "Upload and redact", "data-needs": "redact:own" })
);

const documentForm = h(
  "form",
  { class: "document-form", novalidate: true },
  h(
    "div",
    { class: "field" },
    h("label", { for: fileId, text: "Document" }),
    h("input", { id: fileId, type: "file", accept: ".csv,.json,.ndjson,.jsonl,text/csv,application/json,application/x-ndjson", onchange: guessFormat }),
  ),
  h(
    "div",
    { class: "field" },
    h("label", { for: formatId, text: "Format" }),
    h(
      "select",
      { id: formatId },
      formats.map((f) => h("option", { value: f.value, text: f.label })),
    ),
  ),
  h("p", { class: "hint", text: "The file is streamed from disk as it uploads: any size. The redacted document keeps the uploaded format." }),
  h("div", { class: "actions" }, uploadButton),
  progressBox,
);
documentForm.addEventListener("submit", (event) => {
  event.preventDefault();
  void redactDocument();
});

function guessFormat() {
  const file = /** @type {HTMLInputElement} */ (document.getElementById(fileId)).files?.[0];
  if (!file) return;
  const lower = file.name.toLowerCase();
  const format = formats.find((f) => f.extensions.some((e) => lower.endsWith(e)));
  if (format) /** @type {HTMLSelectElement} */ (document.getElementById(formatId)).value = format.value;
}

/**
 * The upload itself: XMLHttpRequest, for its upload progress events; the File is the body, so
 * the browser streams it from disk.
 * @param {File} file @param {string} contentType @param {URLSearchParams} query
 * @returns {Promise<any>} the job summary
 */
function uploadDocument(file, contentType, query) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", `/redact/document?${query}`);
    for (const [name, value] of Object.entries(requestHeaders({ "content-type": contentType }))) xhr.setRequestHeader(name, value);
    xhr.upload.addEventListener("progress", (event) => {
      const total = event.lengthComputable ? event.total : file.size;
      uploadBar.value = total ? Math.round((event.loaded / total) * 100) : 0;
      uploadText.textContent = `${formatBytes(event.loaded)} of ${formatBytes(total)}`;
    });
    xhr.addEventListener("load", async () => {
      const response = new Response(xhr.responseText || null, { status: xhr.status, headers: { "content-type": xhr.getResponseHeader("content-type") ?? "" } });
      if (xhr.status === 200) {
        uploadBar.value = 100;
        uploadText.textContent = `${formatBytes(file.size)} stored`;
        resolve(await response.json());
        return;
      }
      const error = await errorOf(response);
      // Credentials that lapsed since the check: ask again; the user starts the upload again.
      if (xhr.status === 401) void askForCredentials(xhr, error);
      reject(error);
    });
    xhr.addEventListener("error", () => reject(new ApiError(0, "ERR_NETWORK", "The upload was interrupted (network error).")));
    xhr.addEventListener("abort", () => reject(new ApiError(0, "ERR_ABORTED", "The upload was cancelled.")));
    xhr.send(file);
  });
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function redactDocument() {
  const file = /** @type {HTMLInputElement} */ (document.getElementById(fileId)).files?.[0];
  replace(resultBox);
  if (!file) {
    page.say("Choose a document to upload first.", "error");
    return;
  }
  const query = redactionQuery();
  const contentType = /** @type {HTMLSelectElement} */ (document.getElementById(formatId)).value;
  uploadButton.disabled = true;
  try {
    // A cheap authenticated call first: a 401 is answered before the file is sent, and a
    // gateway without document redaction says so (501) before anything is uploaded.
    await api("/redact/jobs?status=running");
    progressBox.hidden = false;
    uploadBar.value = 0;
    jobBar.value = 0;
    uploadText.textContent = "";
    jobText.textContent = "waiting for the upload";
    page.say(`Uploading ${file.name} (${formatBytes(file.size)})…`);
    const job = await uploadDocument(file, contentType, query);
    page.say(`Stored as job ${job.jobName}; redacting…`);
    let progress;
    for (;;) {
      progress = (await api(`/redact/progress?jobName=${encodeURIComponent(job.jobName)}`)).body;
      jobBar.value = progress.percent;
      jobText.textContent = `${progress.percent}% · ${progress.rowsProcessed} rows · ${progress.status}`;
      if (progress.status !== "running") break;
      await sleep(1000);
    }
    await showJob(job.jobName);
    await drawJobs();
  } catch (error) {
    page.fail(error);
  } finally {
    uploadButton.disabled = false;
  }
}

/** Stats, chart, preview and download of a finished job. @param {string} jobName */
async function showJob(jobName) {
  const stats = (await api(`/redact/stats?jobName=${encodeURIComponent(jobName)}`)).body;
  const failed = stats.status === "failed";
  page.say(failed ? `Job ${jobName} failed: ${stats.error?.message ?? stats.error?.code}.` : `Job ${jobName} is complete.`, failed ? "error" : "ok");
  const preview = h("div", { class: "preview" });
  replace(
    resultBox,
    h("h3", { text: `Job ${jobName}`, tabindex: -1 }),
    h("p", {
      text: `${stats.format.toUpperCase()} for ${stats.type} purpose ${stats.purposeId}, mapping group ${stats.mappingGroup}, decided with configuration revision ${stats.revision}.`,
    }),
    failed
      ? h("p", {
          class: "notice error",
          text: `${stats.error.code}: ${stats.error.message}${stats.error.line ? ` (line ${stats.error.line})` : ""}${stats.error.record ? ` (record ${stats.error.record})` : ""}. No output is kept.`,
        })
      : null,
    statsView(stats),
    failed
      ? null
      : h(
          "div",
          { class: "actions" },
          h("button", { type: "button", text: `Preview the first ${previewRows} rows`, onclick: () => showPreview(jobName, stats.format, preview) }),
          h("button", {
            type: "button",
            class: "primary",
            text: "Download the redacted document",
            onclick: () => download(jobName, stats.format, stats.bytes?.out ?? 0),
          }),
        ),
    preview,
  );
  /** @type {HTMLElement} */ (resultBox.firstChild).focus();
  if (!failed) await showPreview(jobName, stats.format, preview);
}

/** @param {any} stats */
function statsView(stats) {
  if (!stats.rows) return h("p", { text: "No rows were processed." });
  const dropped = Object.entries(/** @type {Record<string, number>} */ (stats.droppedBy)).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const fields = Object.entries(/** @type {Record<string, { category: string | null, kept: number, emptied: number, why: string }>} */ (stats.fields));
  const rowsChart = stackedBars({
    title: "Rows kept and dropped",
    bars: [
      {
        label: "Rows",
        segments: [
          { label: "kept", value: stats.rows.kept, color: keptColor },
          ...dropped.map(([reason, count], i) => ({ label: `dropped: ${reason}`, value: count, color: droppedColors[i % droppedColors.length] })),
        ],
      },
    ],
  });
  const fieldsChart = stackedBars({
    title: "Fields kept and emptied in kept rows",
    bars: fields.map(([name, f]) => ({
      label: name,
      segments: [
        { label: "kept", value: f.kept, color: keptColor },
        { label: "emptied", value: f.emptied, color: emptiedColor },
      ],
    })),
  });
  const number = (/** @type {number} */ n) => h("td", { class: "number", text: n.toLocaleString() });
  return h(
    "div",
    { class: "stats" },
    h(
      "table",
      { class: "rows-stats" },
      h("caption", { text: "Rows" }),
      h(
        "tbody",
        {},
        h("tr", {}, h("th", { scope: "row", text: "In" }), number(stats.rows.in)),
        h("tr", {}, h("th", { scope: "row", text: "Kept" }), number(stats.rows.kept)),
        h("tr", {}, h("th", { scope: "row", text: "Dropped" }), number(stats.rows.dropped)),
        dropped.map(([reason, count]) => h("tr", { class: "dropped-reason" }, h("th", { scope: "row", text: `… ${reason}` }), number(count))),
        stats.rows.emptyLines ? h("tr", {}, h("th", { scope: "row", text: "Empty lines skipped" }), number(stats.rows.emptyLines)) : null,
      ),
    ),
    h("div", { class: "chart" }, rowsChart),
    h(
      "table",
      { class: "fields-stats" },
      h("caption", { text: "Fields in kept rows" }),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col", text: "Field" }),
          h("th", { scope: "col", text: "Category" }),
          h("th", { scope: "col", class: "number", text: "Kept" }),
          h("th", { scope: "col", class: "number", text: "Emptied" }),
          h("th", { scope: "col", text: "Why emptied" }),
        ),
      ),
      h(
        "tbody",
        {},
        fields.map(([name, f]) =>
          h(
            "tr",
            {},
            h("th", { scope: "row", text: name }),
            h("td", { text: f.category ?? "—" }),
            number(f.kept),
            number(f.emptied),
            h("td", { text: f.emptied ? f.why : "" }),
          ),
        ),
      ),
    ),
    fields.length ? h("div", { class: "chart" }, fieldsChart) : null,
    stats.users ? h("p", { text: `Users: ${stats.users.seen} seen, ${stats.users.allowed} allowed, ${stats.users.denied} denied.` }) : null,
  );
}

/**
 * The first records of a CSV text: complete records only (a record is complete once the line
 * break after it, outside quotes, has arrived, or at the end of the document).
 * @param {string} text @param {boolean} final @param {number} limit
 * @returns {string[][]}
 */
export function csvRecords(text, final, limit) {
  const records = [];
  let record = [];
  let value = "";
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (; i < text.length && records.length < limit; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        value += '"';
        i++;
      } else if (c === '"') quoted = false;
      else value += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      record.push(value);
      value = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      record.push(value);
      value = "";
      if (!(record.length === 1 && record[0] === "")) records.push(record);
      record = [];
    } else value += c;
  }
  if (final && records.length < limit && (record.length || value)) records.push([...record, value]);
  return records;
}

/**
 * The first complete top-level objects of a JSON array or NDJSON text.
 * @param {string} text @param {number} limit
 * @returns {any[]}
 */
export function jsonRecords(text, limit) {
  const records = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length && records.length < limit; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{") {
      if (depth === 0) start = i;
      depth++;
    } else if (c === "}") {
      depth--;
      if (depth === 0 && start >= 0) records.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return records;
}

/**
 * Reads only the beginning of the redacted document through a stream reader, then cancels it.
 * @param {string} jobName @param {string} format @param {HTMLElement} into
 */
async function showPreview(jobName, format, into) {
  replace(into, h("p", { text: "Reading the first rows…" }));
  try {
    const response = await request(`/redact/document?jobName=${encodeURIComponent(jobName)}`, { headers: { accept: "application/octet-stream" } });
    const reader = /** @type {ReadableStream<Uint8Array>} */ (response.body).getReader();
    const decoder = new TextDecoder();
    let text = "";
    let done = false;
    let rows = [];
    for (;;) {
      const chunk = await reader.read();
      done = chunk.done;
      if (!done) text += decoder.decode(chunk.value, { stream: true });
      rows = format === "csv" ? csvRecords(text, done, previewRows + 1) : jsonRecords(text, previewRows);
      if (done || rows.length >= (format === "csv" ? previewRows + 1 : previewRows) || text.length >= previewByteLimit) break;
    }
    if (!done) await reader.cancel();
    into.replaceChildren(previewTable(format, rows, done));
  } catch (error) {
    replace(into, h("p", { class: `notice ${describeError(error)[1]}`, text: describeError(error)[0] }));
  }
}

/** @param {string} format @param {any[]} rows @param {boolean} whole */
function previewTable(format, rows, whole) {
  const cellOf = (/** @type {unknown} */ value) =>
    value === "" || value === null || value === undefined
      ? h("td", { class: "empty-cell", text: value === null ? "null" : "(empty)" })
      : h("td", { text: typeof value === "object" ? JSON.stringify(value) : String(value) });
  let header;
  let body;
  if (format === "csv") {
    header = rows[0] ?? [];
    body = rows.slice(1);
  } else {
    header = [...new Set(rows.flatMap((r) => Object.keys(r)))];
    body = rows.map((r) => header.map((k) => r[k]));
  }
  const count = body.length;
  return h(
    "div",
    { class: "preview-table" },
    h("p", { text: count === 0 ? "No rows were kept." : whole ? `All ${count} kept rows:` : `The first ${count} kept rows:` }),
    h(
      "table",
      { class: "preview-rows" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          header.map((name) => h("th", { scope: "col", text: name })),
        ),
      ),
      h(
        "tbody",
        {},
        body.map((row) => h("tr", {}, row.map(cellOf))),
      ),
    ),
  );
}

/**
 * The whole redacted document into memory (a Blob), then saved: the Authorization header
 * cannot go with a plain link, so the browser holds the document while it is saved.
 * @param {string} jobName @param {string} format @param {number} bytes
 */
async function download(jobName, format, bytes) {
  try {
    page.say(`Downloading ${formatBytes(bytes)}…`);
    const response = await request(`/redact/document?jobName=${encodeURIComponent(jobName)}`, { headers: { accept: "application/octet-stream" } });
    const blob = await response.blob();
    saveBlob(blob, `${jobName}.${format}`);
    page.say(`Saved ${jobName}.${format} (${formatBytes(blob.size)}).`, "ok");
  } catch (error) {
    page.fail(error);
  }
}

/** @param {boolean} [askToSignIn] */
async function drawJobs(askToSignIn = false) {
  try {
    const { jobs } = (await api("/redact/jobs", { askToSignIn })).body;
    replace(
      jobsBox,
      jobs.length === 0
        ? h("p", { text: "No jobs yet." })
        : h(
            "table",
            { class: "job-list" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ["Job", "Status", "Purpose", "Mapping group", "Size", "Created", ""].map((t) => h("th", { scope: "col", text: t })),
              ),
            ),
            h(
              "tbody",
              {},
              jobs.slice(0, 10).map((/** @type {any} */ job) =>
                h(
                  "tr",
                  {},
                  h("td", { text: job.jobName }),
                  h("td", { text: job.status }),
                  h("td", { text: `${job.type} ${job.purposeId}` }),
                  h("td", { text: job.mappingGroup }),
                  h("td", { class: "number", text: formatBytes(job.inputBytes) }),
                  h("td", {}, h("time", { dateTime: job.createdAt, text: new Date(job.createdAt).toLocaleString() })),
                  h(
                    "td",
                    {},
                    job.status === "running"
                      ? ""
                      : h("button", {
                          type: "button",
                          text: "Show",
                          "aria-label": `Show job ${job.jobName}`,
                          onclick: () => showJob(job.jobName).catch(page.fail),
                        }),
                  ),
                ),
              ),
            ),
          ),
    );
  } catch (error) {
    replace(
      jobsBox,
      h("p", {
        class: "hint",
        text: error instanceof ApiError && error.status === 501 ? "Document redaction is not available on this gateway." : "Sign in to see the jobs.",
      }),
    );
  }
}

// ---- Single record ----

const recordId = uid("record");
const recordInput = /** @type {HTMLTextAreaElement} */ (h("textarea", { id: recordId, rows: 8, spellcheck: false, "aria-describedby": `${recordId}-hint` }));
const recordHint = h("p", { class: "hint", id: `${recordId}-hint` });
const recordResult = h("div", { class: "record-result", "aria-live": "polite" });

function drawTemplateHint() {
  const group = groups?.find((g) => g.name === /** @type {HTMLInputElement | null} */ (document.getElementById(ids.group))?.value);
  recordHint.textContent = group
    ? `One JSON object; mapping group ${group.name} names: ${group.fieldMappings.map((m) => m.recordField).join(", ")}.`
    : "One JSON object whose keys are the mapping group's record fields.";
}

const recordForm = h(
  "form",
  { class: "record-form", novalidate: true },
  h("div", { class: "field" }, h("label", { for: recordId, text: "Record (JSON)" }), recordInput, recordHint),
  h(
    "div",
    { class: "actions" },
    h("button", { type: "submit", class: "primary", text: "Redact the record", "data-needs": "redact:own" }),
    h("button", {
      type: "button",
      text: "Fill in the mapping group's fields",
      onclick: () => {
        const group = groups?.find((g) => g.name === /** @type {HTMLInputElement} */ (document.getElementById(ids.group)).value);
        if (group) recordInput.value = JSON.stringify(Object.fromEntries(group.fieldMappings.map((m) => [m.recordField, ""])), null, 2);
        recordInput.focus();
      },
    }),
  ),
);
recordForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  replace(recordResult);
  let record;
  try {
    record = JSON.parse(recordInput.value);
  } catch (error) {
    replace(recordResult, h("p", { class: "notice error", role: "alert", text: `Not JSON: ${error instanceof Error ? error.message : error}` }));
    return;
  }
  if (!record || typeof record !== "object" || Array.isArray(record)) {
    replace(recordResult, h("p", { class: "notice error", role: "alert", text: "The record must be one JSON object." }));
    return;
  }
  try {
    const { body } = await api(`/redact/record?${redactionQuery()}`, { method: "PUT", json: record });
    replace(recordResult, recordView(record, body));
  } catch (error) {
    replace(recordResult, h("p", { class: `notice ${describeError(error)[1]}`, role: "alert", text: describeError(error)[0] }));
  }
});

/** The value at a dotted path of a record (a key that is itself the whole dotted name first). @param {any} record @param {string} path */
function valueAt(record, path) {
  if (record && Object.hasOwn(record, path)) return record[path];
  return path.split(".").reduce((v, k) => (v && typeof v === "object" ? v[k] : undefined), record);
}

/** @param {any} record @param {any} answer */
function recordView(record, answer) {
  const advice = answer.advice?.find((/** @type {any} */ a) => a.id === "urn:service:attribute:message:summary")?.value;
  const show = (/** @type {unknown} */ v) => (v === undefined ? "(absent)" : v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v));
  if (answer.dropped) {
    return h(
      "div",
      { class: "record-dropped" },
      h("p", {}, h("span", { class: "badge dropped", text: "Dropped" }), " The record is dropped: none of its values may be used for this purpose."),
      advice ? h("p", { text: advice }) : null,
      h(
        "ul",
        { class: "reasons" },
        answer.reasons.map((/** @type {any} */ r) => h("li", {}, h("code", { text: r.code }), ` ${r.text}`)),
      ),
      h("p", { class: "hint", text: `Trace ${answer.traceId}, configuration revision ${answer.revision}.` }),
    );
  }
  const fields = Object.entries(/** @type {Record<string, { kept: boolean, why: string }>} */ (answer.fields));
  return h(
    "div",
    { class: "record-kept" },
    h("p", {}, h("span", { class: "badge kept", text: "Kept" }), ` ${fields.filter(([, f]) => f.kept).length} of ${fields.length} fields kept.`),
    advice ? h("p", { text: advice }) : null,
    h(
      "table",
      { class: "record-fields" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ["Field", "Sent", "Returned", "", "Why"].map((t) => h("th", { scope: "col", text: t })),
        ),
      ),
      h(
        "tbody",
        {},
        fields.map(([path, f]) =>
          h(
            "tr",
            { "data-field": path },
            h("th", { scope: "row", text: path }),
            h("td", { text: show(valueAt(record, path)) }),
            h("td", { text: show(valueAt(answer.record, path)) }),
            h("td", {}, h("span", { class: f.kept ? "badge kept" : "badge emptied", text: f.kept ? "kept" : "emptied" })),
            h("td", { class: "why", text: f.why }),
          ),
        ),
      ),
    ),
    h("p", { class: "hint", text: `Trace ${answer.traceId}, configuration revision ${answer.revision}.` }),
  );
}

// ---- Page ----

page.main.append(
  h("h1", { text: "Redaction" }),
  h(
    "section",
    { class: "panel", "aria-labelledby": "what-for" },
    h("h2", { id: "what-for", text: "What for" }),
    h("p", {
      class: "about",
      text: "Rows of users whose data may not be used for this purpose are dropped; in kept rows, fields whose category the purpose does not allow, or that the mapping group maps to no category, are emptied.",
    }),
    requestBox,
  ),
  h(
    "section",
    { class: "panel", "aria-labelledby": "document-heading" },
    h("h2", { id: "document-heading", text: "Redact a document" }),
    documentForm,
    resultBox,
  ),
  h(
    "section",
    { class: "panel", "aria-labelledby": "record-heading" },
    h("h2", { id: "record-heading", text: "Redact a single record" }),
    recordForm,
    recordResult,
  ),
  h("section", { class: "panel", "aria-labelledby": "jobs-heading" }, h("h2", { id: "jobs-heading", text: "Recent jobs" }), jobsBox),
);

/** The jobs (this component's own call: it asks to sign in), then the lists of purposes and groups. */
async function start() {
  drawRequestFields();
  await drawJobs(true);
  await loadLists();
}

/** The lists come from /config and /mapping: with credentials that do not open them, ids are typed instead. */
async function loadLists() {
  const [configAnswer, groupsAnswer] = await Promise.allSettled([api("/config", { askToSignIn: false }), api("/mapping/groups", { askToSignIn: false })]);
  config = configAnswer.status === "fulfilled" ? configAnswer.value.body : null;
  groups = groupsAnswer.status === "fulfilled" ? groupsAnswer.value.body.groups : null;
  const unavailable = [configAnswer, groupsAnswer].find((a) => a.status === "rejected" && a.reason instanceof ApiError && a.reason.authUnavailable);
  if (unavailable) page.fail(/** @type {PromiseRejectedResult} */ (unavailable).reason);
  drawRequestFields();
}
onCredentialsChange(() => void loadLists().then(() => drawJobs()));
void start();
