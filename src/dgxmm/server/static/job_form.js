// The job form (/jobs/new, /jobs/{name}/edit): presets, the live preview of the next times,
// and the define through the JSON API. Uses api(), flash() and showError() from dgxmm.js,
// which loads first.
"use strict";

function setupJobForm(form) {
  const schedule = form.elements.schedule;
  const preview = document.getElementById("preview");
  const showFor = () => {
    const action = form.querySelector('input[name="action"]:checked').value;
    form.querySelectorAll("[data-show-for]").forEach((el) => {
      el.hidden = el.dataset.showFor !== action;
    });
  };
  form.querySelectorAll('input[name="action"]').forEach((el) => el.addEventListener("change", showFor));
  showFor();

  const zone = form.elements.time_zone;
  let timer = null;
  // Each question is numbered, and only the newest one's answer is shown: an older answer
  // that arrives last (a slow server) would put what the form said before in its place.
  let asked = 0;
  const refresh = async () => {
    clearTimeout(timer);
    const mine = ++asked;
    const text = schedule.value.trim();
    if (!text) { preview.textContent = ""; return; }
    const place = zone.value.trim();
    const where = place ? `&zone=${encodeURIComponent(place)}` : "";
    try {
      const data = await api("GET", `/api/jobs/preview?n=5&schedule=${encodeURIComponent(text)}${where}`);
      if (mine !== asked) return;
      preview.replaceChildren();
      const head = document.createElement("p");
      head.textContent = `${data.description} (${data.zone}); next:`;
      const list = document.createElement("ol");
      for (const t of data.times) {
        const item = document.createElement("li");
        item.textContent = t.at.replace("T", " ") + (t.moved ? " (moved by a DST gap)" : "");
        list.append(item);
      }
      preview.append(head, list);
      preview.className = "preview";
    } catch (error) {
      if (mine !== asked) return;
      preview.textContent = error.message;
      preview.className = "preview error";
    }
  };
  schedule.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(refresh, 250); });
  zone.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(refresh, 250); });
  document.getElementById("presets").addEventListener("change", (event) => {
    if (event.target.value) { schedule.value = event.target.value; refresh(); }
  });
  document.getElementById("zone-presets").addEventListener("change", (event) => {
    if (event.target.value) { zone.value = event.target.value; refresh(); }
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
  refresh();

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const action = form.querySelector('input[name="action"]:checked').value;
    const body = { name: form.elements.name.value.trim(), schedule: schedule.value.trim(), action };
    body.enabled = form.elements.enabled.checked;
    if (action === "query") {
      body.query = form.elements.query.value;
      const text = form.elements.args.value.trim();
      if (text) {
        try { body.args = JSON.parse(text); } catch (error) {
          showError(form, { field: "args", message: `args: not valid JSON (${error.message})` });
          return;
        }
      }
    } else if (action === "backup") {
      body.path = form.elements.path.value.trim();
    }
    const timeout = form.elements.timeout.value.trim();
    if (timeout) {
      const seconds = Number(timeout);
      if (!Number.isFinite(seconds)) {
        showError(form, { field: "timeout_ms", message: `${JSON.stringify(timeout)} is not a number of seconds` });
        return;
      }
      body.timeout_ms = Math.round(seconds * 1000);
    }
    const description = form.elements.description.value.trim();
    if (description) body.description = description;
    const place = zone.value.trim();
    if (place) body.time_zone = place;
    // A job kept off keeps the note of why (it goes when the job is switched on).
    if (!body.enabled && form.elements.pause_note.value) body.pause_note = form.elements.pause_note.value;
    for (const key of ["coalesce", "overlap"]) {
      if (form.elements[key].value) body[key] = form.elements[key].value;
    }
    for (const key of ["retries", "retry_backoff_s", "retry_backoff_max_s", "catchup_window_s"]) {
      const text = form.elements[key].value.trim();
      if (!text) continue;
      const number = Number(text);
      if (!Number.isFinite(number)) {
        showError(form, { field: key, message: `${JSON.stringify(text)} is not a number` });
        return;
      }
      body[key] = number;
    }
    try {
      await api("POST", "/api/jobs/define", body);
      sessionStorage.setItem(NOTE, JSON.stringify({ text: `${body.name} defined` }));
      location.href = "/jobs";
    } catch (error) {
      // The API's timeout_ms is in milliseconds ("got -5000"); the form's is in seconds.
      for (const one of error.errors || [error]) {
        if (one.field === "timeout_ms") {
          one.message = `${timeout} s is not a positive number of seconds, up to 365 days`;
        }
      }
      showError(form, error);
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("job-form");
  if (form) setupJobForm(form);
});
