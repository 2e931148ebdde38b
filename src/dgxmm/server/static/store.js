// The Store page: its operations (checkpoint, compact, backup, restore), the rollback with
// its preview, and the attic's Restore and Remove. Uses api(), flash(), confirmAction() and
// showError() from dgxmm.js, which loads first.
"use strict";

// What a rollback does to each query and job, in words.
const ROLLBACK_WORDS = {
  define: "restored: it comes back as it was",
  replace: "changed back to its definition then",
  drop: "dropped: to the attic",
};

function rollbackChanges(count) { return count === 1 ? "1 change" : `${count} changes`; }

// A rollback's preview as a list of what changes, not the API's JSON.
function showRollback(result) {
  document.getElementById("store-result").textContent = "";
  const out = document.getElementById("rollback-preview");
  out.replaceChildren();
  const head = document.createElement("p");
  head.textContent = result.steps.length
    ? `Back to catalog version ${result.to_version} (now ${result.from_version}): ${rollbackChanges(result.steps.length)}`
    : `Catalog version ${result.to_version} has the definitions of now: nothing to change.`;
  const list = document.createElement("ul");
  list.className = "rollback-steps";
  for (const step of result.steps) {
    const item = document.createElement("li");
    item.dataset.change = step.change;
    const name = document.createElement("strong");
    name.textContent = step.name;
    const off = step.switched_off ? ` (off: ${step.switched_off})` : "";
    item.append(`${step.kind} `, name, ` ${ROLLBACK_WORDS[step.change] || step.change}${off}`);
    list.append(item);
  }
  out.append(head, list);
}

function setupStore() {
  const out = document.getElementById("store-result");
  const run = async (operation, body, scope) => {
    if (scope) clearErrors(scope);
    out.textContent = `${operation}…`;
    out.className = "";
    try {
      const result = await api("POST", `/api/store/${operation}`, body);
      out.textContent = JSON.stringify(result, null, 2);
    } catch (error) {
      out.textContent = error.message;
      out.className = "error";
      if (scope) showError(scope, error);
    }
  };
  document.querySelectorAll("button[data-store]").forEach((button) => {
    button.addEventListener("click", () => run(button.dataset.store));
  });
  document.querySelectorAll("form[data-store]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const body = Object.fromEntries(new FormData(form).entries());
      run(form.dataset.store, body, form);
    });
  });
  const rollback = document.getElementById("rollback-form");
  if (rollback) {
    rollback.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(rollback);
      const preview = event.submitter && event.submitter.name === "preview";
      const body = { version: Number(rollback.elements.version.value) };
      document.getElementById("rollback-preview").replaceChildren();
      try {
        // A rollback is shown before it is done, and asked for, like Drop and Stop.
        const planned = await api("POST", "/api/store/rollback?dry_run=true", body);
        showRollback(planned);
        if (preview || !planned.steps.length) return;
        const question = `Roll the catalog back to version ${body.version}? `
          + `${rollbackChanges(planned.steps.length)}, listed below.`;
        if (!(await confirmAction(question, "Roll back"))) return;
        const done = await api("POST", "/api/store/rollback", body);
        flashAfterReload(`Rolled back to version ${done.to_version}: `
          + `${rollbackChanges(done.steps.length)}, as catalog version ${done.version}`);
      } catch (error) {
        out.textContent = error.message;
        out.className = "error";
        showError(rollback, error);
      }
    });
  }
  // Delegated: the attic is live (static/live.js swaps it), and a swapped row's own listener
  // would be gone.
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("#attic button[data-attic]");
    if (!button) return;
    const row = button.closest("tr[data-attic-name]");
    const operation = button.dataset.attic;
    const { atticKind: kind, atticName: name, atticId: id } = row.dataset;
    if (operation === "remove" && !await confirmAction(`Remove ${kind} ${name} from the attic for good?`, "Remove")) return;
    if (operation === "restore" && !await confirmAction(`Restore ${kind} ${name}? It is defined again as it was when it was dropped.`, "Restore")) return;
    try {
      const result = await api("POST", `/api/attic/${operation}`, { kind, name, id: Number(id) });
      flashAfterReload(result.switched_off ? `restored ${name}, ${result.switched_off}` : `${operation}d ${kind} ${name}`);
    } catch (error) { flash(error.message, "error"); }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  if (document.getElementById("store-result")) setupStore();
});
