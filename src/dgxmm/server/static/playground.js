// The playground page: the same Scheduled jobs list and job form as the server's pages, over
// the engine in playground-worker.mjs instead of the server's API. Every call is a message to
// the worker; its answer has the server's shapes (rows, {error, field, message, errors}).
"use strict";

// ?clock=page: the time of every tick is the page's (which Playwright's clock moves, and
// which does not reach a worker): the worker's timer asks the page for it, and the page's
// own timer ticks too, so moving the page's clock moves the engine. Otherwise the worker
// ticks on its own timer and clock every 5 s.
const PAGE_CLOCK = new URLSearchParams(location.search).get("clock") === "page";
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;
const worker = new Worker("/static/playground-worker.mjs", { type: "module" });
const pending = new Map();
let nextId = 1;

function call(method, path, body) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, (answer) => {
      if (answer.status < 400) { resolve(answer.body); return; }
      const error = new Error(answer.body.message);
      error.status = answer.status;
      error.field = answer.body.field;
      error.errors = answer.body.errors || null;
      reject(error);
    });
    worker.postMessage({ kind: "request", id, method, path, now: Date.now(),
      body: body === undefined ? null : JSON.stringify(body) });
  });
}

worker.onmessage = (event) => {
  const message = event.data;
  if (message.kind === "answer") {
    const done = pending.get(message.id);
    pending.delete(message.id);
    if (done) done(message);
  } else if (message.kind === "ready") {
    setStatus(`Ready: Pyodide ${message.pyodide}, ticking every 5 s in ${message.zone}.`);
    // Ready once the page shows the engine's jobs and zone, not before its first answer.
    refresh().finally(() => { document.body.dataset.ready = "true"; });
  } else if (message.kind === "time?") {
    worker.postMessage({ kind: "tick", now: Date.now(), source: "worker" });
  } else if (message.kind === "ticked") {
    if (message.source === "worker") {
      document.body.dataset.workerTicks = String(Number(document.body.dataset.workerTicks || 0) + 1);
    }
    if (message.ran.length) refresh();
  } else if (message.kind === "failed") {
    setStatus(`The engine did not start: ${message.message}`, "error");
  }
};
worker.onerror = (event) => setStatus(`The engine's worker failed: ${event.message}`, "error");
worker.postMessage({ kind: "start", zone: ZONE, ownClock: !PAGE_CLOCK });
if (PAGE_CLOCK) {
  setInterval(() => worker.postMessage({ kind: "tick", now: Date.now(), source: "page" }), 5000);
}

function setStatus(text, kind) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = kind === "error" ? "error" : "muted";
}

function flash(text, kind) {
  const box = document.getElementById("flash");
  box.textContent = text;
  box.className = kind === "error" ? "notice error" : "notice ok";
}

function clearErrors(scope) {
  scope.querySelectorAll(".field-error").forEach((el) => { el.textContent = ""; });
  scope.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
}

function showError(scope, error) {
  for (const one of error.errors || [error]) {
    const slot = scope.querySelector(`[data-error-for="${one.field}"]`)
      || scope.querySelector('[data-error-for="form"]');
    slot.textContent = slot.textContent ? `${slot.textContent}; ${one.message}` : one.message;
    const input = slot.closest("label")?.querySelector("input, select, textarea");
    if (input) input.setAttribute("aria-invalid", "true");
  }
}

function text(tag, value, className) {
  const el = document.createElement(tag);
  el.textContent = value;
  if (className) el.className = className;
  return el;
}

function when(iso) { return iso ? iso.replace("T", " ").slice(0, 19) : "—"; }

function button(label, action) {
  const b = text("button", label, "link");
  b.type = "button";
  b.dataset.action = action;
  return b;
}

// -- the job list ----------------------------------------------------------------------------

let rows = [];
let engineZone = null;  // the browser's zone, which the engine reads schedules in

async function refresh() {
  const listed = await call("GET", "/api/jobs");
  rows = listed.jobs;
  engineZone = listed.time_zone;
  document.getElementById("zone").textContent = listed.time_zone;
  document.getElementById("now").textContent = when(listed.now);
  const body = document.querySelector("#jobs tbody");
  body.replaceChildren(...rows.map(jobRow));
  labelCells(body);
  const queries = (await call("GET", "/api/queries")).queries;
  renderQueries(queries);
  renderChannels(await call("GET", "/api/workload"));
}

function jobRow(job) {
  const tr = document.createElement("tr");
  tr.dataset.job = job.name;
  const name = text("td", job.name);
  name.append(" ", text("span", job.kind, "tag"));
  if (job.running) name.append(" ", text("span", "running", "badge running"));
  if (job.description) name.append(text("div", job.description, "muted"));
  if (job.pause_note) name.append(text("div", `“${job.pause_note}”`, "pause-note"));
  const schedule = text("td", job.schedule, "schedule");
  schedule.append(text("div", job.schedule_description, "muted"));
  if (job.time_zone && job.time_zone !== engineZone) schedule.append(text("div", `in ${job.time_zone}`, "muted job-zone"));
  const last = document.createElement("td");
  last.className = "last-run";
  if (job.last_run) {
    last.append(text("span", `${when(job.last_run.started_at)} ${job.last_run.outcome}`));
    if (job.last_run.error) last.append(text("div", job.last_run.error, "error"));
  } else last.textContent = "—";
  const on = document.createElement("td");
  const box = document.createElement("input");
  box.type = "checkbox";
  box.checked = job.enabled;
  box.dataset.action = "enable";
  box.setAttribute("aria-label", `${job.name} on`);
  on.append(box);
  const actions = document.createElement("td");
  actions.append(button("Run now", "run"));
  if (job.kind === "user") actions.append(" ", button("Edit", "edit"), " ", button("Drop", "drop"));
  else {
    const field = document.createElement("input");
    field.className = "system-schedule";
    field.placeholder = job.builtin_schedule;
    field.value = job.schedule === job.builtin_schedule ? "" : job.schedule;
    field.setAttribute("aria-label", `${job.name} schedule`);
    actions.append(" ", field, button("Schedule", "schedule"));
  }
  tr.append(name, schedule, text("td", when(job.next_at), "next"), last,
    text("td", String(job.runs.last_two_days), "runs"), on, actions);
  return tr;
}

// Switching a job off asks for an optional note of why (#pause); resolves the note ("" for
// none), or null when the person cancelled.
function askPauseNote(name) {
  const dialog = document.getElementById("pause");
  dialog.querySelector(".pause-question").textContent = `Switch ${name} off?`;
  const note = dialog.querySelector("#pause-note");
  note.value = "";
  dialog.returnValue = "";
  dialog.showModal();
  note.focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes" ? note.value.trim() : null), { once: true });
  });
}

document.addEventListener("change", async (event) => {
  const box = event.target.closest('input[data-action="enable"]');
  if (!box) return;
  const name = box.closest("tr").dataset.job;
  const body = { name, enabled: box.checked };
  if (!box.checked) {
    const note = await askPauseNote(name);
    if (note === null) { box.checked = true; return; }
    if (note) body.note = note;
  }
  try {
    await call("POST", "/api/jobs/enable", body);
    flash(`${name} switched ${box.checked ? "on" : "off"}`);
  } catch (error) { box.checked = !box.checked; flash(error.message, "error"); }
  refresh();
});

document.addEventListener("click", async (event) => {
  const target = event.target.closest("#jobs button[data-action]");
  if (!target) return;
  const tr = target.closest("tr");
  const name = tr.dataset.job;
  try {
    if (target.dataset.action === "run") {
      const result = await call("POST", "/api/jobs/run", { name });
      flash(`${name}: ${result.outcome}` + (result.error ? `: ${result.error}` : result.detail ? `: ${result.detail}` : ""),
        result.outcome === "succeeded" ? "ok" : "error");
    } else if (target.dataset.action === "drop") {
      await call("POST", "/api/jobs/drop", { name });
      flash(`dropped ${name}`);
    } else if (target.dataset.action === "schedule") {
      const value = tr.querySelector(".system-schedule").value.trim();
      await call("POST", "/api/jobs/schedule", { name, schedule: value || null });
      flash(`${name}: ${value || "its built-in schedule"}`);
    } else if (target.dataset.action === "edit") {
      openForm(rows.find((row) => row.name === name));
      return;
    }
  } catch (error) { flash(error.message, "error"); }
  refresh();
});

// -- the job form ----------------------------------------------------------------------------

const form = document.getElementById("job-form");

function showAction() {
  const action = form.querySelector('input[name="action"]:checked').value;
  form.querySelectorAll("[data-show-for]").forEach((el) => { el.hidden = el.dataset.showFor !== action; });
}

function openForm(job) {
  clearErrors(form);
  form.hidden = false;
  form.reset();
  document.getElementById("job-form-title").textContent = job ? `Edit job ${job.name}` : "New job";
  form.elements.name.readOnly = Boolean(job);
  if (job) {
    form.elements.name.value = job.name;
    form.querySelector(`input[name="action"][value="${job.action}"]`).checked = true;
    form.elements.query.value = job.query || "";
    form.elements.args.value = job.args && Object.keys(job.args).length ? JSON.stringify(job.args) : "";
    form.elements.schedule.value = job.schedule;
    form.elements.enabled.checked = job.enabled;
    form.elements.timeout.value = job.timeout_ms ? job.timeout_ms / 1000 : "";
    form.elements.description.value = job.description || "";
    form.elements.time_zone.value = job.time_zone !== engineZone ? job.time_zone : "";
    form.elements.retries.value = job.retries || "";
    form.elements.retry_backoff_s.value = job.retry_backoff_s || "";
    form.elements.retry_backoff_max_s.value = job.retry_backoff_max_s || "";
    form.elements.catchup_window_s.value = job.catchup_window_s || "";
    form.elements.coalesce.value = job.coalesce || "";
    form.elements.overlap.value = job.overlap || "skip";
  }
  showAction();
}

document.getElementById("new-job").addEventListener("click", () => openForm(null));
document.getElementById("cancel").addEventListener("click", () => { form.hidden = true; });
form.addEventListener("change", (event) => { if (event.target.name === "action") showAction(); });
document.getElementById("presets").addEventListener("change", (event) => {
  if (event.target.value) form.elements.schedule.value = event.target.value;
});
document.getElementById("catchup-presets").addEventListener("change", (event) => {
  if (!event.target.value) return;
  const [span, how] = event.target.value.split(",");
  form.elements.catchup_window_s.value = span;
  form.elements.coalesce.value = how;
});
document.getElementById("retry-presets").addEventListener("change", (event) => {
  if (!event.target.value) return;
  const [count, first, most] = event.target.value.split(",");
  form.elements.retries.value = count;
  form.elements.retry_backoff_s.value = first;
  form.elements.retry_backoff_max_s.value = most;
});
document.getElementById("zone-presets").addEventListener("change", (event) => {
  if (event.target.value) form.elements.time_zone.value = event.target.value;
});

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  clearErrors(form);
  const action = form.querySelector('input[name="action"]:checked').value;
  const body = { name: form.elements.name.value.trim(), schedule: form.elements.schedule.value.trim(),
    action, enabled: form.elements.enabled.checked };
  if (action === "query") {
    body.query = form.elements.query.value;
    const args = form.elements.args.value.trim();
    if (args) {
      try { body.args = JSON.parse(args); } catch (error) {
        showError(form, { field: "args", message: `args: not valid JSON (${error.message})` });
        return;
      }
    }
  } else if (action === "backup") body.path = form.elements.path.value.trim();
  const timeout = form.elements.timeout.value.trim();
  if (timeout) body.timeout_ms = Math.round(Number(timeout) * 1000);
  const description = form.elements.description.value.trim();
  if (description) body.description = description;
  const zone = form.elements.time_zone.value.trim();
  if (zone) body.time_zone = zone;
  for (const key of ["coalesce", "overlap"]) {
    if (form.elements[key].value) body[key] = form.elements[key].value;
  }
  for (const key of ["retries", "retry_backoff_s", "retry_backoff_max_s", "catchup_window_s"]) {
    const text = form.elements[key].value.trim();
    if (text) body[key] = Number(text);
  }
  try {
    await call("POST", "/api/jobs/define", body);
    form.hidden = true;
    flash(`defined ${body.name}`);
    refresh();
  } catch (error) { showError(form, error); }
});

// -- saved queries and the workload ---------------------------------------------------------

function renderQueries(queries) {
  const list = document.getElementById("queries");
  list.replaceChildren(...queries.map((q) => {
    const li = text("li", `${q.name}(${Object.keys(q.params).join(", ")}): `);
    li.dataset.query = q.name;
    li.append(text("code", q.body), " ");
    const run = button("Run", "run-query");
    li.append(run);
    return li;
  }));
  const select = form.elements.query;
  const chosen = select.value;
  select.replaceChildren(text("option", "— choose —"), ...queries.map((q) => {
    const option = text("option", q.name);
    option.value = q.name;
    return option;
  }));
  select.firstChild.value = "";
  select.value = chosen;
}

function renderChannels(workload) {
  const since = (Date.now() - 2 * 86400 * 1000) * 1000;
  document.querySelector("#channels tbody").replaceChildren(...Object.entries(workload).map(([channel, tiers]) => {
    const buckets = tiers.minutes.filter((b) => b.start_us >= since);
    const sum = (key) => buckets.reduce((total, b) => total + b[key], 0);
    const tr = document.createElement("tr");
    tr.dataset.channel = channel;
    tr.append(text("td", channel), text("td", String(sum("count")), "count"),
      text("td", String(sum("failures")), "failures"), text("td", `${sum("total_ms").toFixed(1)} ms`));
    return tr;
  }));
  labelCells(document.querySelector("#channels tbody"));
}

// On a phone a table's rows become cards (dgxmm.css), and each cell shows its column's
// heading as its label, as the console's tables do.
function labelCells(body) {
  const headings = [...body.closest("table").tHead.rows[0].cells].map((th) => th.textContent);
  for (const tr of body.rows) {
    [...tr.cells].forEach((td, index) => { if (headings[index]) td.dataset.label = headings[index]; });
  }
}

// Run a saved query now, with the arguments typed in the job form's box (counted under the
// channel playground).
document.getElementById("queries").addEventListener("click", async (event) => {
  const target = event.target.closest('button[data-action="run-query"]');
  if (!target) return;
  const name = target.closest("li").dataset.query;
  const text = form.elements.args.value.trim();
  try {
    const result = await call("POST", "/api/queries/run", { name, args: text ? JSON.parse(text) : {} });
    flash(`${name}: ${result.detail}`);
  } catch (error) { flash(`${name}: ${error.message}`, "error"); }
  refresh();
});

const queryForm = document.getElementById("query-form");
queryForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  clearErrors(queryForm);
  let params;
  try { params = JSON.parse(document.getElementById("q-params").value || "{}"); } catch (error) {
    showError(queryForm, { field: "params", message: `params: not valid JSON (${error.message})` });
    return;
  }
  try {
    const saved = await call("POST", "/api/queries/define", {
      name: document.getElementById("q-name").value.trim(), params,
      body: document.getElementById("q-body").value });
    flash(`saved query ${saved.name}`);
    queryForm.reset();
    refresh();
  } catch (error) { showError(queryForm, error); }
});
