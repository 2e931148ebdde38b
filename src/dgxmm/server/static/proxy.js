// The Proxy page: save the hold's settings (PUT /api/proxy/settings, every wrong field shown
// beside it) and unload a model (POST /api/deployments/{id}/sleep, the deployment's own
// action). Uses api(), flash(), settle(), clearErrors(), showError() from dgxmm.js.
"use strict";

(function () {
  const form = document.getElementById("proxy-settings");
  if (form && document.getElementById("proxy-save")) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(form);
      const body = {};
      for (const input of form.querySelectorAll("input[name]")) {
        const text = input.value.trim();
        // A number where it reads as one (MiB fields back to the API's bytes, data-scale);
        // otherwise the text, so the API names the field.
        const scale = Number(input.dataset.scale || 1);
        body[input.name] = text !== "" && !Number.isNaN(Number(text))
          ? (scale === 1 ? Number(text) : Math.round(Number(text) * scale)) : text;
      }
      try {
        await api("PUT", "/api/proxy/settings", body);
        await settle("proxy settings saved");
      } catch (error) {
        showError(form, error);
      }
    });
  }

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-unload]");
    if (!button) return;
    const row = button.closest("tr");
    button.disabled = true;
    try {
      await api("POST", `/api/deployments/${button.dataset.unload}/sleep`);
      await settle(`${row.dataset.name} is asleep: its memory is free, a request wakes it`);
    } catch (error) {
      button.disabled = false;
      flash(error.message, "error");
    }
  });
})();
