// A deployment page's model check: send the form to POST /api/deployments/{id}/check and
// show the answer, its time to first token and its tokens per second. The server makes the
// call (the browser never reaches a model server). Uses api(), clearErrors(), showError().
"use strict";

(function () {
  const form = document.getElementById("check-form");
  if (!form) return;
  const put = (id, text) => { document.getElementById(id).textContent = text; };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const send = document.getElementById("check-send");
    const tokens = form.elements.max_tokens.value.trim();
    send.disabled = true;
    send.textContent = "Sending…";
    try {
      const answer = await api("POST", `/api/deployments/${form.dataset.deployment}/check`, {
        kind: form.elements.kind.value,
        prompt: form.elements.prompt.value,
        // A number where one was typed; else the text, so the API names the field.
        max_tokens: tokens !== "" && !Number.isNaN(Number(tokens)) ? Number(tokens) : tokens,
      });
      put("check-answer", answer.answer + (answer.cut ? " … (cut: the answer passed 64 KiB)" : ""));
      put("check-first", answer.first_token_ms === null ? "no token came" : `${answer.first_token_ms} ms`);
      // null: too few tokens, or too short a span, to tell a speed (the server's rule).
      put("check-speed", answer.tokens_per_s === null
        ? `- (${answer.tokens} token${answer.tokens === 1 ? "" : "s"}: too few or too fast to time)`
        : `${answer.tokens_per_s} tokens/s (${answer.tokens} tokens)`);
      put("check-total", `${answer.total_ms} ms`);
      put("check-route", answer.route === "proxy" ? "through the proxy" : "straight to the server (no proxy runs)");
      document.getElementById("check-result").hidden = false;
    } catch (error) {
      showError(form, error);
    } finally {
      send.disabled = false;
      send.textContent = "Send";
    }
  });
})();
