"""The words a newcomer had to guess, each said once: the pages' tooltips and docs/glossary.md.

A template shows one as ``<abbr class="gloss" title="{{ glossary['held'] }}">held</abbr>``;
the ``glossed`` filter does the same to the words of a text (a system job's description).
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

__all__ = ["GLOSSARY", "glossed"]

GLOSSARY = {
    "held": "held: GPU memory a deployment keeps (all of it awake, a little asleep); of "
    "a request, kept unanswered by the proxy while its deployment wakes, then passed on",
    "sidecar": "sidecar: the file beside the database (dgxmm.db.workload.json) where the jobs' "
    "workload statistics are written every minute, so a restart keeps them",
    "rollup": "rollup: one row per deployment and minute, summing the /metrics samples of "
    "that minute (requests, latency, queue); the charts and the proposals read them",
    "level 1 / level 2": "sleep level 1: the weights move to the host's memory and come back "
    "in seconds; level 2: the weights are dropped and read again from disk on waking "
    "(slower, and frees the host's memory too)",
}

# The words ``glossed`` marks: a plural or a "metric rollups" still reads as the word.
_WORDS = re.compile(r"\b(sidecar|rollups?)\b")


def glossed(text: str | None) -> Markup:
    """Return ``text`` escaped, each glossary word in it an ``<abbr>`` with its meaning."""
    if not text:
        return Markup("")

    def mark(found: re.Match[str]) -> str:
        word = found.group(1)
        meaning = GLOSSARY["rollup" if word.startswith("rollup") else word]
        return f'<abbr class="gloss" title="{escape(meaning)}">{word}</abbr>'

    return Markup(_WORDS.sub(mark, str(escape(text))))
