// The Alerts page: add and remove channels and rules, send a test, make a new secret, all
// through /api/alerts. A secret is shown once, from the answer that made it, and never kept.
// Uses api(), flash(), settle(), clearErrors(), showError(), confirmAction() from dgxmm.js.
"use strict";

(function () {
  function showSecret(answer) {
    const box = document.getElementById("secret-once");
    box.querySelector(".secret-channel").textContent = answer.channel.name;
    box.querySelector(".secret-value").textContent = answer.secret;
    box.hidden = false;
  }

  function numberOrNothing(form, name) {
    const value = form.elements[name].value.trim();
    return value === "" ? undefined : Number(value);
  }

  document.getElementById("new-channel").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    clearErrors(form);
    try {
      const answer = await api("POST", "/api/alerts/channels", {
        name: form.elements.name.value.trim(),
        url: form.elements.url.value.trim(),
        format: form.elements.format.value,
      });
      form.reset();
      showSecret(answer);
      await settle(`channel ${answer.channel.name} added`);
    } catch (error) {
      showError(form, error);
    }
  });

  document.getElementById("new-rule").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    clearErrors(form);
    const channels = form.elements.channels.value.split(",").map((s) => s.trim()).filter(Boolean);
    try {
      const rule = await api("POST", "/api/alerts/rules", {
        name: form.elements.name.value.trim(),
        condition: form.elements.condition.value,
        threshold: numberOrNothing(form, "threshold"),
        window_minutes: numberOrNothing(form, "window_minutes"),
        quiet_minutes: numberOrNothing(form, "quiet_minutes"),
        channels,
      });
      form.reset();
      await settle(`rule ${rule.name} added`);
    } catch (error) {
      showError(form, error);
    }
  });

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button");
    if (!button) return;
    const row = button.closest("tr");
    try {
      if (button.dataset.test) {
        const answer = await api("POST", `/api/alerts/channels/${button.dataset.test}/test`);
        await settle(`test to ${row.dataset.name} queued (delivery ${answer.delivery}); the log shows how it went`);
      } else if (button.dataset.secret) {
        if (!(await confirmAction(`Replace the secret of ${row.dataset.name}? Its receiver must learn the new one.`, "Replace"))) return;
        showSecret(await api("POST", `/api/alerts/channels/${button.dataset.secret}/secret`));
      } else if (button.dataset.removeChannel) {
        if (!(await confirmAction(`Remove channel ${row.dataset.name} and its deliveries?`, "Remove"))) return;
        await api("DELETE", `/api/alerts/channels/${button.dataset.removeChannel}`);
        await settle(`channel ${row.dataset.name} removed`);
      } else if (button.dataset.switchRule) {
        const on = button.dataset.to === "true";
        await api("POST", `/api/alerts/rules/${button.dataset.switchRule}/enabled`, { enabled: on });
        await settle(`rule ${row.dataset.name} switched ${on ? "on" : "off"}`);
      } else if (button.dataset.removeRule) {
        if (!(await confirmAction(`Remove rule ${row.dataset.name}?`, "Remove"))) return;
        await api("DELETE", `/api/alerts/rules/${button.dataset.removeRule}`);
        await settle(`rule ${row.dataset.name} removed`);
      }
    } catch (error) {
      flash(error.message, "error");
    }
  });
})();
