// dgxmm pages: every button and form here calls the JSON API (the login cookie carries the
// token), shows the answer, and puts a refused field's message next to that field.
"use strict";

async function api(method, path, body) {
  const options = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (!response.ok) {
    const error = new Error((data && data.message) || response.statusText);
    error.status = response.status;
    error.field = data && data.field;
    error.errors = (data && data.errors) || null; // every wrong field, when the check went on
    throw error;
  }
  return data;
}

// Notices: each result is a styled line in #flash with its own dismiss button; errors stay
// until dismissed, others fade after a while. At most four are kept, the newest last.
function flash(text, kind) {
  const box = document.getElementById("flash");
  if (!box) return;
  const notice = document.createElement("div");
  notice.className = `notice ${kind || "ok"}`;
  notice.setAttribute("role", kind === "error" ? "alert" : "status");
  const message = document.createElement("span");
  message.className = "notice-text";
  message.textContent = text;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "link notice-close";
  close.setAttribute("aria-label", "Dismiss");
  close.textContent = "×";
  close.addEventListener("click", () => notice.remove());
  notice.append(message, close);
  box.append(notice);
  while (box.children.length > 4) box.firstElementChild.remove();
  if (kind !== "error") setTimeout(() => notice.remove(), 15000);
}

// A notice that survives the reload that follows it (for the few actions that reload).
const NOTE = "dgxmm-note";
function flashAfterReload(text, kind) {
  sessionStorage.setItem(NOTE, JSON.stringify({ text, kind: kind || "" }));
  location.reload();
}
document.addEventListener("DOMContentLoaded", () => {
  const note = sessionStorage.getItem(NOTE);
  if (!note) return;
  sessionStorage.removeItem(NOTE);
  const { text, kind } = JSON.parse(note);
  flash(text, kind);
});

// Ask before an action that cannot be taken back (Stop, Remove, Drop, Restore), in the page's
// own dialog (#confirm in base.html); resolves true for a yes.
function confirmAction(question, verb) {
  const dialog = document.getElementById("confirm");
  if (!dialog || !dialog.showModal) return Promise.resolve(window.confirm(question));
  dialog.querySelector(".confirm-question").textContent = question;
  const yes = dialog.querySelector("[data-confirm=yes]");
  yes.textContent = verb || "Yes";
  dialog.returnValue = "";
  dialog.showModal();
  yes.focus();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
  });
}

// After an action: update the page in place where it is live, else reload it with a notice.
function settle(text, kind) {
  if (document.body.dataset.live && typeof live !== "undefined") {
    if (text) flash(text, kind);
    return live.refresh();
  }
  flashAfterReload(text, kind);
  return Promise.resolve();
}

// Copy an element's text: a button with data-copy="ID" copies the element of that id (the
// proxy's address, an example request, a new token). Over plain http a browser may have no
// clipboard: then the text is selected, so Ctrl+C copies it.
async function copyText(id) {
  const element = document.getElementById(id);
  if (!element) return;
  try {
    await navigator.clipboard.writeText(element.textContent);
    flash("copied");
  } catch (_) {
    const range = document.createRange();
    range.selectNodeContents(element);
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
    flash("selected: press Ctrl+C to copy");
  }
}
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (button) copyText(button.dataset.copy);
});

function clearErrors(scope) {
  scope.querySelectorAll(".field-error").forEach((el) => { el.textContent = ""; });
  scope.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
}

// Every wrong field's message beside it; the focus goes to the first of them on the page, so
// a keyboard or screen reader lands where the fixing starts.
function showError(scope, error) {
  for (const one of error.errors || [error]) showFieldError(scope, one);
  const first = scope.querySelector('[aria-invalid="true"]');
  if (first) first.focus();
}

function showFieldError(scope, error) {
  const field = error.field || "form";
  // "gpus[1]" and "environment.HOME" are shown beside the gpus and environment fields.
  const names = [field, field.split(".")[0], field.split(/[.[]/)[0]];
  for (const name of names) {
    const slot = scope.querySelector(`[data-error-for="${name}"]`);
    if (slot) {
      // Beside its field, under the field's label: the API's "key: " before a message goes.
      const message = error.message.startsWith(`${field}: `)
        ? error.message.slice(field.length + 2) : error.message;
      slot.textContent = slot.textContent ? `${slot.textContent}; ${message}` : message;
      const input = scope.querySelector(`[name="${name}"]`)
        || slot.closest("label")?.querySelector("input, select, textarea");
      if (input) input.setAttribute("aria-invalid", "true");
      return;
    }
  }
  const fallback = scope.querySelector('[data-error-for="form"]');
  if (fallback) fallback.textContent = error.message; else flash(error.message, "error");
}

// -- the job list ----------------------------------------------------------------------------

// A job's row in the list, or the heading of its own page.
function jobRow(el) { return el.closest("[data-job]"); }

// Switching a job off asks for an optional note of why (#pause in base.html); resolves the
// note ("" for none), or null when the person cancelled.
function askPauseNote(name) {
  const dialog = document.getElementById("pause");
  if (!dialog || !dialog.showModal) return Promise.resolve("");
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
  const row = jobRow(box);
  const body = { name: row.dataset.job, enabled: box.checked };
  if (!box.checked) {
    const note = await askPauseNote(row.dataset.job);
    if (note === null) { box.checked = true; return; }
    if (note) body.note = note;
  }
  try {
    await api("POST", "/api/jobs/enable", body);
    settle(`${row.dataset.job} switched ${box.checked ? "on" : "off"}${body.note ? `: ${body.note}` : ""}`);
  } catch (error) {
    box.checked = !box.checked;
    flash(error.message, "error");
  }
});

document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  const action = button.dataset.action;
  if (action === "run") {
    const row = jobRow(button);
    const name = row.dataset.job;
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    const shown = live.refresh();  // the row says "running" while it runs
    try {
      const result = await api("POST", "/api/jobs/run", { name });
      const why = result.error ? `: ${result.error}` : result.detail ? `: ${result.detail}` : "";
      const text = `${name}: ${result.outcome.replace("_", " ")} in ${result.duration_ms} ms${why}`;
      await shown;
      button.removeAttribute("aria-busy");
      settle(text, result.outcome === "succeeded" ? "ok" : "error");
    } catch (error) {
      flash(`${name}: ${error.message}`, "error");
    } finally {
      button.removeAttribute("aria-busy");
      button.disabled = false;
    }
  } else if (action === "drop") {
    const row = jobRow(button);
    if (!await confirmAction(`Drop job ${row.dataset.job}? It goes to the attic (Store page), where it can be restored.`, "Drop")) return;
    try {
      await api("POST", "/api/jobs/drop", { name: row.dataset.job });
      if (row.tagName !== "TR") {
        sessionStorage.setItem(NOTE, JSON.stringify({ text: `dropped ${row.dataset.job}` }));
        location.href = "/jobs";
        return;
      }
      row.remove();
      flash(`dropped ${row.dataset.job}`);
    } catch (error) { flash(error.message, "error"); }
  } else if (action === "cancel-run") {
    const { runId, jobName } = button.dataset;
    if (!await confirmAction(`Cancel run ${runId} of ${jobName}? Its work stops; a query's changes are rolled back, a backup's partial files removed.`, "Cancel run")) return;
    button.disabled = true;
    try {
      await api("POST", `/api/jobs/runs/${runId}/cancel`);
      settle(`run ${runId} of ${jobName}: cancel asked`);
    } catch (error) {
      button.disabled = false;
      flash(error.message, "error");
    }
  } else if (action === "drop-query") {
    const row = button.closest("tr[data-query]");
    if (!await confirmAction(`Drop query ${row.dataset.query}? It goes to the attic (Store page), where it can be restored.`, "Drop")) return;
    try {
      await api("POST", "/api/queries/drop", { name: row.dataset.query });
      row.remove();
      flash(`dropped ${row.dataset.query}`);
    } catch (error) { flash(error.message, "error"); }
  }
});

document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (form.dataset.action === "schedule") {
    event.preventDefault();
    clearErrors(form);
    const row = jobRow(form);
    const text = form.elements.schedule.value.trim();
    try {
      await api("POST", "/api/jobs/schedule", { name: row.dataset.job, schedule: text || null });
      form.elements.schedule.blur();
      settle(`${row.dataset.job}: schedule ${text || "back to its built-in one"}`);
    } catch (error) { showError(form, error); }
  }
});

// -- saved queries and a job's explain box ------------------------------------------------------

function setupQueryForm(form) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    let params = {};
    try { params = JSON.parse(form.elements.params.value.trim() || "{}"); } catch (error) {
      showError(form, { field: "params", message: `params: not valid JSON (${error.message})` });
      return;
    }
    const body = { name: form.elements.name.value.trim(), params, body: form.elements.body.value };
    const description = form.elements.description.value.trim();
    if (description) body.description = description;
    try {
      await api("POST", "/api/queries/define", body);
      flashAfterReload(`${body.name} defined`);
    } catch (error) { showError(form, error); }
  });
}

// A job's page: why a time ran or not (GET /api/jobs/{name}/explain).
function setupExplain(form) {
  const out = document.getElementById("explain-result");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const at = form.elements.at.value.trim();
    try {
      const data = await api("GET", `/api/jobs/${encodeURIComponent(form.dataset.job)}/explain?at=${encodeURIComponent(at)}`);
      out.replaceChildren();
      const head = document.createElement("strong");
      head.textContent = data.verdict.replace(/_/g, " ") + (data.cause ? ` (${data.cause.replace(/_/g, " ")})` : "");
      const detail = document.createElement("div");
      detail.textContent = data.detail;
      out.append(head, detail);
      out.dataset.verdict = data.verdict;
      out.dataset.cause = data.cause || "";
    } catch (error) {
      out.textContent = "";
      showError(form, error);
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const explain = document.getElementById("explain-form");
  if (explain) setupExplain(explain);
  const queryForm = document.getElementById("query-form");
  if (queryForm) setupQueryForm(queryForm);
});

// -- a deployment's schedules ----------------------------------------------------------------

function setupSchedules(table) {
  const deployment = table.dataset.deployment;
  const base = `/api/deployments/${deployment}/schedules`;
  // Delegated: the table is live (static/live.js swaps it), and a swapped table's own
  // listener would be gone.
  document.addEventListener("click", async (event) => {
    const row = event.target.closest("#schedules tr[data-schedule]");
    if (!row) return;
    const id = row.dataset.schedule;
    try {
      if (event.target.matches("[data-schedule-toggle]")) {
        await api("PATCH", `${base}/${id}`, { enabled: event.target.dataset.scheduleToggle === "on" });
        location.reload();
      } else if (event.target.matches("[data-schedule-delete]")) {
        if (!await confirmAction(`Delete schedule ${id}?`, "Delete")) return;
        await api("DELETE", `${base}/${id}`);
        location.reload();
      }
    } catch (error) { flash(error.message, "error"); }
  });
  const paused = document.getElementById("paused-all");
  if (paused) {
    paused.addEventListener("change", async () => {
      try {
        await api("PUT", "/api/schedules/paused-all", { paused_all: paused.checked });
        location.reload();
      } catch (error) { paused.checked = !paused.checked; flash(error.message, "error"); }
    });
  }
  const form = document.getElementById("schedule-form");
  if (!form) return;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    let days = 0;
    form.querySelectorAll('input[name="day"]:checked').forEach((box) => { days += Number(box.value); });
    const body = { action: form.elements.action.value, days, time: form.elements.time.value.trim() };
    const zone = form.elements.time_zone.value.trim();
    if (zone) body.time_zone = zone;
    try {
      await api("POST", base, body);
      location.reload();
    } catch (error) { showError(form, error); }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const table = document.getElementById("schedules");
  if (table) setupSchedules(table);
});

// -- the display zone and the theme ------------------------------------------------------------

// The footer's zone menu: the server renders every time in the zone the cookie names.
document.addEventListener("change", (event) => {
  const menu = event.target.closest('#zone-switch select[name="zone"]');
  if (!menu) return;
  let value = menu.value;
  if (value === "browser") value = `browser:${Intl.DateTimeFormat().resolvedOptions().timeZone}`;
  document.cookie = `dgxmm_zone=${value}; path=/; max-age=31536000; samesite=lax`;
  location.reload();
});

// Dark or light: the system's choice (prefers-color-scheme) until the switch picks one. Each
// click goes round three: the other theme than the system's, the system's own, and back to
// following the system (so a choice can be undone).
function themeSaid(theme) { return `theme: ${theme || "as the system"} (change)`; }

document.addEventListener("click", (event) => {
  const button = event.target.closest("#theme-switch");
  if (!button) return;
  const root = document.documentElement;
  const system = window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  const other = system === "dark" ? "light" : "dark";
  const now = root.dataset.theme || "";
  const next = now === "" ? other : now === other ? system : "";
  try {
    if (next) localStorage.setItem("dgxmm-theme", next); else localStorage.removeItem("dgxmm-theme");
  } catch (_) { /* private mode */ }
  if (next) root.dataset.theme = next; else delete root.dataset.theme;
  button.title = themeSaid(next);
  button.setAttribute("aria-label", themeSaid(next));
});
document.addEventListener("DOMContentLoaded", () => {
  const button = document.getElementById("theme-switch");
  if (!button) return;
  const said = themeSaid(document.documentElement.dataset.theme || "");
  button.title = said;
  button.setAttribute("aria-label", said);
});

// -- values on hover -------------------------------------------------------------------------

// A chart's bar names its time and value (data-tip) in a tip beside the pointer; the SVG's
// <title> says the same to a screen reader and where there is no pointer.
(function () {
  let tip = null;
  document.addEventListener("pointerover", (event) => {
    const bar = event.target.closest && event.target.closest("svg g[data-tip]");
    if (!bar) { if (tip) tip.hidden = true; return; }
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "chart-tip";
      tip.setAttribute("role", "tooltip");
      document.body.append(tip);
    }
    tip.textContent = bar.dataset.tip;
    tip.hidden = false;
  });
  document.addEventListener("pointermove", (event) => {
    if (!tip || tip.hidden) return;
    const x = Math.min(event.clientX + 12, window.innerWidth - tip.offsetWidth - 4);
    tip.style.left = `${Math.max(4, x)}px`;
    tip.style.top = `${event.clientY + 14}px`;
  });
})();
