// Live pages: a page whose <body data-live="jobs,deployments"> names topics polls
// /api/changes every two seconds; when a topic changed it fetches itself again and swaps
// each element marked data-live (matched by id) for its fresh copy. The server renders the
// page as before, so there is one way to draw a row, and a row is never drawn twice.
//
// When the poll names the rows that moved (its "keys": the jobs whose runs started, ended or
// were skipped), and every live region of the page says it changes only by its rows
// (data-live-rows="job": its rows are [data-job]; empty: it has none that move), only the
// moved rows shown here are fetched, by name (?row=a&row=b), and swapped one by one. A row
// not on this page costs nothing at all.
"use strict";

const live = (function () {
  const PERIOD_MS = 2000;
  const topics = document.body.dataset.live || "";
  let version = null;
  let running = null;
  let behind = false;  // a region was left as it was (someone typing): swap it next time

  function isTyping(region) {
    const active = document.activeElement;
    const typed = "textarea, select, input:not([type=checkbox]):not([type=radio]):not([type=submit])";
    return active && region.contains(active) && active.matches(typed);
  }

  function waits(region) {
    // A region someone is typing into, or whose action is under way, waits for the next poll.
    return isTyping(region) || region.querySelector("[aria-busy=true]") !== null;
  }

  // A region or a row as the server drew it: times.js writes its relative words into
  // data-ago, which the fresh copy lacks, and those words alone are no change worth a swap.
  function served(element) {
    const copy = element.cloneNode(true);
    [copy, ...copy.querySelectorAll("[data-ago]")].forEach((el) => el.removeAttribute("data-ago"));
    return copy.outerHTML;
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
    return (fresh) => fresh.matches(scope + control) ? fresh : fresh.querySelector(scope + control);
  }

  // Put ``next`` where ``old`` is, unless it is the same; keep the keyboard's place.
  function replace(old, next) {
    if (next.outerHTML === served(old)) return;
    const find = place(old);
    const adopted = document.adoptNode(next);
    old.replaceWith(adopted);
    // A person tabbing through a table that changed keeps their place in it.
    const again = find && find(adopted);
    if (again) again.focus({ preventScroll: true });
  }

  async function fetchPage(url) {
    const response = await fetch(url, {
      credentials: "same-origin", headers: { Accept: "text/html" },
    });
    if (!response.ok || !response.headers.get("content-type").startsWith("text/html")) {
      return null;
    }
    return new DOMParser().parseFromString(await response.text(), "text/html");
  }

  async function swap() {
    const fresh = await fetchPage(location.href);
    if (!fresh) return;
    behind = false;
    document.querySelectorAll("[data-live][id]").forEach((region) => {
      const next = fresh.getElementById(region.id);
      if (!next) return;
      if (waits(region)) {
        behind = true;
        return;
      }
      replace(region, next);
    });
    document.dispatchEvent(new CustomEvent("dgxmm:swapped"));
  }

  // The moved rows' names, or null when some topic's are unknown or a region is not by rows.
  function movedKeys(answer) {
    const keys = answer.keys || {};
    const named = topics.split(",").map((topic) => keys[topic]);
    if (named.some((list) => !Array.isArray(list))) return null;
    const regions = [...document.querySelectorAll("[data-live][id]")];
    if (regions.some((region) => !region.hasAttribute("data-live-rows"))) return null;
    return new Set(named.flat());
  }

  async function swapRows(moved) {
    const shown = [];  // [attribute, key, row]
    document.querySelectorAll("[data-live][data-live-rows]").forEach((region) => {
      const attribute = region.dataset.liveRows;
      if (!attribute) return;
      region.querySelectorAll(`[data-${attribute}]`).forEach((row) => {
        const key = row.getAttribute(`data-${attribute}`);
        if (moved.has(key)) shown.push([attribute, key, row]);
      });
    });
    if (!shown.length) return;  // nothing shown here moved: nothing to fetch
    const url = new URL(location.href);
    url.searchParams.delete("row");
    shown.forEach(([, key]) => url.searchParams.append("row", key));
    const fresh = await fetchPage(url);
    if (!fresh) return;
    for (const [attribute, key, row] of shown) {
      const next = fresh.querySelector(`[data-${attribute}="${CSS.escape(key)}"]`);
      if (!next) return swap();  // a row gone from the page: draw it whole
      if (waits(row)) {
        behind = true;
        continue;
      }
      replace(row, next);
    }
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
    if (force || first || behind) return swap();
    if (!answer.changed) return;
    const moved = movedKeys(answer);
    return moved === null ? swap() : swapRows(moved);
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
