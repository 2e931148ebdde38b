// The API tokens page: make a token (shown once, from the answer that made it, never kept),
// revoke one after asking. The list is the server's: after a change the script fetches the
// page again and swaps its table in, so the token shown stays on screen.
// Uses api(), flash(), clearErrors(), showError(), confirmAction() from dgxmm.js.
"use strict";

(function () {
  async function refreshList() {
    const answer = await fetch("/tokens", { credentials: "same-origin" });
    const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
    const table = fresh.getElementById("tokens");
    if (table) document.getElementById("tokens").replaceWith(table);
  }

  document.getElementById("new-token").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    clearErrors(form);
    const days = form.elements.expires_in_days.value;
    const name = form.elements.name.value.trim();
    try {
      const made = await api("POST", "/api/tokens", {
        role: form.elements.role.value,
        name: name === "" ? undefined : name,
        expires_in_days: days === "" ? null : Number(days),
      });
      const box = document.getElementById("token-once");
      box.querySelector(".token-name").textContent = made.name;
      box.querySelector(".token-role").textContent = made.role;
      box.querySelector(".token-value").textContent = made.token;
      box.hidden = false;
      box.focus();
      form.reset();
      flash(`token ${made.name} made${made.expires_at ? "" : "; it never expires"}`);
      await refreshList();
    } catch (error) {
      showError(form, error);
    }
  });

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-revoke]");
    if (!button) return;
    const row = button.closest("tr");
    if (!(await confirmAction(`Revoke token ${row.dataset.name}? Whatever uses it stops working at once.`, "Revoke"))) return;
    try {
      await api("POST", `/api/tokens/${button.dataset.revoke}/revoke`);
      flash(`token ${row.dataset.name} revoked`);
      await refreshList();
    } catch (error) {
      flash(error.message, "error");
    }
  });
})();
