// The fleet's pages: start, wake, sleep and stop through the API; before a start or wake,
// ask for its plan and, when it would evict something, show that and wait for a yes.
// A stop asks first. Uses api(), flash(), settle(), confirmAction() from dgxmm.js.
"use strict";

(function () {

  function describe(result) {
    const name = result.deployment.name;
    let text = `${name}: ${result.action} ${result.outcome}`;
    if (result.detail) text += ` (${result.detail})`;
    for (const eviction of result.evictions) {
      text += `; ${eviction.deployment.name}: ${eviction.action} ${eviction.outcome}`;
    }
    return text;
  }

  async function run(box, action, body) {
    const out = box.parentElement.querySelector(".action-result");
    box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    box.setAttribute("aria-busy", "true");
    if (out) { out.textContent = `${action}…`; out.className = "action-result"; }
    try {
      const result = await api("POST", `/api/deployments/${box.dataset.id}/${action}`, body);
      box.removeAttribute("aria-busy");
      const failed = result.outcome === "failed";
      settle(describe(result), failed ? "error" : "ok");
    } catch (error) {
      box.removeAttribute("aria-busy");
      if (out) { out.textContent = ""; }
      flash(`${box.dataset.name}: ${error.message}`, "error");
      box.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    }
  }

  function showPlan(box, action, plan) {
    const preview = document.getElementById("plan-preview");
    const list = preview.querySelector(".plan-evictions");
    const confirm = document.getElementById("plan-confirm");
    list.replaceChildren();
    preview.dataset.id = box.dataset.id;
    preview.dataset.action = action;
    if (plan.feasible) {
      preview.querySelector(".plan-reason").textContent =
        `${box.dataset.name} does not fit as things are. To ${action} it, dgxmm will:`;
      for (const eviction of plan.evictions) {
        const item = document.createElement("li");
        item.dataset.deployment = eviction.name;
        item.dataset.evict = eviction.action;
        item.textContent = `${eviction.action} ${eviction.name} (priority ${eviction.priority}, ` +
          `${eviction.state}), freeing ${eviction.frees_gib} GiB per GPU`;
        list.append(item);
      }
      confirm.style.display = "";  // not .hidden: the buttons' display rule would win
      confirm.textContent = `Evict and ${action}`;
    } else {
      preview.querySelector(".plan-reason").textContent =
        `${box.dataset.name} cannot ${action}: ${plan.reason}`;
      confirm.style.display = "none";
    }
    preview.hidden = false;
    confirm.onclick = () => { preview.hidden = true; run(box, action, { plan: true }); };
    document.getElementById("plan-cancel").onclick = () => { preview.hidden = true; };
  }

  // A deployment's server log: its tail, then what follows every two seconds while "follow"
  // is on; the page keeps the last KEEP characters.
  function followLog(section) {
    const KEEP = 200000;
    const text = section.querySelector("#log-text");
    const follow = section.querySelector("#log-follow");
    const size = section.querySelector("#log-size");
    let end = null;
    const read = async () => {
      const query = end === null ? "" : `?offset=${end}`;
      try {
        const chunk = await api("GET", `${section.dataset.log}${query}`);
        if (chunk.rotated) text.textContent = "";
        if (chunk.text) {
          text.textContent = (text.textContent + chunk.text).slice(-KEEP);
          if (follow.checked) text.scrollTop = text.scrollHeight;
        }
        end = chunk.end;
        size.textContent = `${chunk.size} bytes`;
      } catch (error) { size.textContent = error.message; }
    };
    read();
    setInterval(() => { if (follow.checked && !document.hidden) read(); }, 2000);
  }
  document.addEventListener("DOMContentLoaded", () => {
    const section = document.getElementById("server-log");
    if (section) followLog(section);
  });

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-deploy-action]");
    if (button) {
      const box = button.closest(".deploy-actions");
      const action = button.dataset.deployAction;
      if (action === "start" || action === "wake") {
        try {
          const plan = await api("GET", `/api/deployments/${box.dataset.id}/plan`);
          if (plan.fits_now) run(box, action, { plan: true });
          else showPlan(box, action, plan);
        } catch (error) { flash(error.message, "error"); }
      } else if (action === "stop") {
        const question = `Stop ${box.dataset.name}? Its model server is shut down and its GPU ` +
          "memory freed; requests to it fail until it is started again.";
        if (await confirmAction(question, "Stop")) run(box, action);
      } else {
        run(box, action);
      }
      return;
    }
    const dismiss = event.target.closest("button[data-dismiss]");
    if (dismiss) {
      try {
        await api("POST", `/api/insights/${dismiss.dataset.dismiss}/dismiss`);
        settle("dismissed");
      } catch (error) { flash(error.message, "error"); }
      return;
    }
    const remove = event.target.closest("button[data-remove]");
    if (remove) {
      const question = `Remove deployment ${remove.dataset.name}? Its process is stopped and ` +
        "its events, metrics and schedules are deleted.";
      if (!await confirmAction(question, "Remove")) return;
      try {
        await api("DELETE", `/api/deployments/${remove.dataset.remove}`);
        sessionStorage.setItem(NOTE, JSON.stringify({ text: `removed ${remove.dataset.name}` }));
        location.href = "/deployments";
      } catch (error) { flash(error.message, "error"); }
    }
  });

})();
