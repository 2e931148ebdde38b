// Live pages: a page whose <body data-live="jobs,deployments"> names topics polls
// /api/changes every two seconds; when a topic changed it fetches itself again and swaps
// each element marked data-live (matched by id) for its fresh copy. The server renders the
// page as before, so there is one way to draw a row, and a row is never drawn twice.
"use strict";

const live = (function () {
  const PERIOD_MS = 2000;
  const topics = document.body.dataset.live || "";
  let version = null;
  let running = null;

  function isTyping(region) {
    const active = document.activeElement;
    const typed = "textarea, select, input:not([type=checkbox]):not([type=radio]):not([type=submit])";
    return active && region.contains(active) && active.matches(typed);
  }

  // The region as the server drew it: times.js writes its relative words into data-ago,
  // which the fresh copy lacks, and those words alone are no change worth a swap.
  function served(region) {
    const copy = region.cloneNode(true);
    copy.querySelectorAll("[data-ago]").forEach((el) => el.removeAttribute("data-ago"));
    return copy.innerHTML;
  }

  // Where the keyboard is inside a region, as a way to find the same control in its fresh
  // copy: its id, or else its link or its field's name within the row it sits in.
  function place(region) {
    const active = document.activeElement;
    if (!active || active === document.body || !region.contains(active)) return null;
    if (active.id) return (fresh) => fresh.querySelector(`#${CSS.escape(active.id)}`);
    const row = active.closest("[data-run], [data-job], [data-id], [data-name], tr[id]");
    const rowKey = row && row !== region ? [...row.attributes].find((a) => a.name === "id" ||
      ["data-run", "data-job", "data-id", "data-name"].includes(a.name)) : null;
    const own = ["href", "name", "data-action"].find((name) => active.hasAttribute(name));
    if (!own) return null;
    const control = `${active.localName}[${own}="${CSS.escape(active.getAttribute(own))}"]`;
    const scope = rowKey ? `[${rowKey.name}="${CSS.escape(rowKey.value)}"] ` : "";
    return (fresh) => fresh.querySelector(scope + control);
  }

  async function swap() {
    const response = await fetch(location.href, {
      credentials: "same-origin", headers: { Accept: "text/html" },
    });
    if (!response.ok || !response.headers.get("content-type").startsWith("text/html")) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    document.querySelectorAll("[data-live][id]").forEach((region) => {
      const next = fresh.getElementById(region.id);
      // A region someone is typing into, or whose action is under way, waits for the next poll.
      if (!next || isTyping(region) || region.querySelector("[aria-busy=true]")) return;
      if (next.innerHTML === served(region)) return;
      const find = place(region);
      const adopted = document.adoptNode(next);
      region.replaceWith(adopted);
      // A person tabbing through a table that changed keeps their place in it.
      const again = find && find(adopted);
      if (again) again.focus({ preventScroll: true });
    });
    document.dispatchEvent(new CustomEvent("dgxmm:swapped"));
  }

  async function check(force) {
    if (!topics) return;
    const query = `topics=${encodeURIComponent(topics)}` +
      (version ? `&since=${encodeURIComponent(version)}` : "");
    const answer = await api("GET", `/api/changes?${query}`);
    const first = version === null;
    version = answer.version;
    // The first answer is the baseline, read after the page was rendered: a change between
    // the two is in the baseline but not on the page, so the page is fetched again once.
    if (force || first || answer.changed) await swap();
  }

  // One check at a time: an action's refresh waits for the poll under way, then runs.
  function refresh(force = true) {
    const previous = running || Promise.resolve();
    running = previous.then(() => check(force)).catch(() => {}).finally(() => {
      running = null;
    });
    return running;
  }

  if (topics) {
    refresh(false);
    setInterval(() => { if (!document.hidden && !running) refresh(false); }, PERIOD_MS);
  }
  return { refresh };
})();
