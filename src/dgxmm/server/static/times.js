// Relative times: every <time datetime> the server drew (the "when" filter) also says how
// long ago or how far ahead it is ("3 min ago", "in 2 h"), beside the absolute time, and
// keeps saying it as the page stays open. The words sit in data-ago, which dgxmm.css shows
// after the time, so a test or a copy of the table reads the absolute time alone.
"use strict";

const times = (function () {
  const UNITS = [[86400, "day"], [3600, "h"], [60, "min"]];

  function spoken(seconds) {
    const size = Math.abs(seconds);
    if (size < 45) return seconds <= 0 ? "just now" : "in a moment";
    for (const [unit, word] of UNITS) {
      if (size >= unit || unit === 60) {
        const count = Math.round(size / unit);
        const noun = word === "day" && count !== 1 ? "days" : word;
        return seconds < 0 ? `${count} ${noun} ago` : `in ${count} ${noun}`;
      }
    }
    return "just now";  // not reached: the minutes take every size from 45 s
  }

  function mark(root) {
    const now = Date.now();
    (root || document).querySelectorAll("time[datetime]").forEach((el) => {
      const at = Date.parse(el.dateTime);
      if (!Number.isNaN(at)) el.dataset.ago = spoken(Math.round((at - now) / 1000));
    });
  }

  mark();
  document.addEventListener("dgxmm:swapped", () => mark());
  setInterval(() => { if (!document.hidden) mark(); }, 30_000);
  return { mark, spoken };
})();
