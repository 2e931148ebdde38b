// A deployment's traffic page: accept or dismiss a proposal, rebuild the profile and propose,
// all through the JSON API. Uses api() and flash() from dgxmm.js, which loads first.
"use strict";

(function () {
  document.addEventListener("DOMContentLoaded", () => {
    const page = document.getElementById("traffic");
    if (!page) return;
    const deployment = Number(page.dataset.deployment);

    // Delegated: the proposals are live (static/live.js swaps them), and a swapped table's
    // own listener would be gone.
    document.addEventListener("click", async (event) => {
      const button = event.target.closest("#proposals button[data-proposal-action]");
      if (!button) return;
      const row = button.closest("tr[data-proposal]");
      const action = button.dataset.proposalAction;
      const cold = Number(row.dataset.cold || 0);
      if (action === "accept" && cold > 0) {
        // The backtest found requests that would have met it asleep: say how many first.
        const question = `In its backtest, ${cold} request${cold === 1 ? "" : "s"} would have `
          + "waited for this deployment to wake. Accept the proposal anyway?";
        if (!await confirmAction(question, "Accept")) return;
      }
      row.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      try {
        const result = await api("POST", `/api/proposals/${row.dataset.proposal}/${action}`);
        const done = action === "accept"
          ? `accepted: schedules ${result.schedules.map((s) => s.id).join(" and ")} created`
          : "dismissed: not proposed again for 7 days";
        flashAfterReload(`${result.proposal.description}: ${done}`);
      } catch (error) {
        row.querySelectorAll("button").forEach((b) => { b.disabled = false; });
        flash(error.message, "error");
      }
    });

    const rebuild = document.getElementById("rebuild");
    if (rebuild) {
      rebuild.addEventListener("click", async () => {
        rebuild.disabled = true;
        flash("rebuilding…");
        try {
          const result = await api("POST", "/api/traffic/rebuild", { deployment_id: deployment, propose: true });
          const run = result.proposals.deployments[0];
          flashAfterReload(run.note ? `rebuilt; no proposals: ${run.note}` : `rebuilt; ${run.open.length} open proposal${run.open.length === 1 ? "" : "s"}`);
        } catch (error) {
          rebuild.disabled = false;
          flash(error.message, "error");
        }
      });
    }
  });
})();
