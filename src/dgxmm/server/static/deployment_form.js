// The deployment form: each field's input read by its kind (data-kind), the backend's own
// fields shown for that backend only (the wake lead's seconds box for seconds only), sent to
// the API (an edit sends only what changed), and each refused field's message put beside it.
// Uses api(), showError() from dgxmm.js.
"use strict";

(function () {
  function read(field, form) {
    const kind = field.dataset.kind;
    const name = field.dataset.field;
    if (kind === "gpus") {
      return [...form.querySelectorAll('input[name="gpus"]:checked')].map((b) => Number(b.value));
    }
    if (kind === "budget") {
      // The wait budget: a mean in ms and/or a p99 in s; both empty is no budget (null).
      const found = {};
      for (const key of ["mean_ms", "p99_s"]) {
        const text = form.elements[`${name}_${key}`].value.trim();
        if (!text) continue;
        const number = Number(text);
        found[key] = Number.isFinite(number) ? number : text; // text: the API names the key
      }
      return Object.keys(found).length ? found : null;
    }
    const input = form.elements[name];
    if (kind === "bool") return input.checked;
    if (kind === "lead") {
      // off or measured as the menu says, else the seconds in the box beside it.
      if (input.value !== "seconds") return input.value;
      const seconds = form.elements[`${name}_seconds`].value.trim();
      if (!seconds) throw { field: name, message: "give the seconds (0-900)" };
      const number = Number(seconds);
      return Number.isFinite(number) ? number : seconds;
    }
    const text = input.value.trim();
    if (kind === "lines") return text ? text.split("\n").map((l) => l.trim()).filter(Boolean) : null;
    if (kind === "env") {
      if (!text) return null;
      const found = {};
      for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
        const at = line.indexOf("=");
        if (at < 1) throw { field: name, message: `${JSON.stringify(line)} is not NAME=value` };
        found[line.slice(0, at)] = line.slice(at + 1);
      }
      return found;
    }
    if (!text) return null;
    if (kind === "int" || kind === "float") {
      const number = Number(text);
      if (Number.isFinite(number)) return number;
      // Refused here, in the form's unit: the API's type check would name the key instead.
      const unit = name.endsWith("_s") ? " of seconds" : name.includes("gib") ? " of GiB" : "";
      const what = kind === "int" ? "a whole number" : `a number${unit}`;
      throw { field: name, message: `${JSON.stringify(text)} is not ${what}` };
    }
    if (kind === "json") {
      try { return JSON.parse(text); } catch (error) {
        throw { field: name, message: `not valid JSON (${error.message})` };
      }
    }
    return text;
  }

  // An emptied list box reads as null: the same as an empty list kept (no aliases), so an
  // edit that did not touch it does not send it.
  function bare(value) { return Array.isArray(value) && !value.length ? null : value ?? null; }
  function same(a, b) { return JSON.stringify(bare(a)) === JSON.stringify(bare(b)); }

  function setup(form) {
    const initial = JSON.parse(form.dataset.initial);
    const backend = form.elements.backend;
    const showFor = () => {
      form.querySelectorAll("[data-backends]").forEach((field) => {
        field.hidden = !field.dataset.backends.split(" ").includes(backend.value);
      });
    };
    backend.addEventListener("change", showFor);
    showFor();
    form.querySelectorAll('[data-kind="lead"]').forEach((field) => {
      const mode = field.querySelector("select");
      const seconds = field.querySelector("input");
      const showSeconds = () => { seconds.hidden = mode.value !== "seconds"; };
      mode.addEventListener("change", showSeconds);
      showSeconds();
    });

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(form);
      const body = {};
      const refused = []; // every field the form cannot read, shown at once
      form.querySelectorAll("[data-field]").forEach((field) => {
        if (field.hidden) return;
        const name = field.dataset.field;
        let value;
        try { value = read(field, form); } catch (error) { refused.push(error); return; }
        if (form.dataset.id) {
          if (!same(value, initial[name])) body[name] = value;
        } else if (value !== null) {
          body[name] = value;
        }
      });
      if (refused.length) { showError(form, { errors: refused }); return; }
      if (form.dataset.id && backend.value !== "process") {
        // Moving off a process: its process fields go, or the check refuses them.
        for (const name of ["command", "port", "environment"]) {
          if (initial[name] !== null && initial[name] !== undefined) body[name] = null;
        }
      }
      try {
        const saved = form.dataset.id
          ? await api("PATCH", `/api/deployments/${form.dataset.id}`, body)
          : await api("POST", "/api/deployments", body);
        sessionStorage.setItem(NOTE, JSON.stringify({
          text: `${saved.name} ${form.dataset.id ? "saved" : "created"}`,
        }));
        location.href = `/deployments/${saved.id}`;
      } catch (error) { showError(form, error); }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("deployment-form");
    if (form) setup(form);
  });
})();
