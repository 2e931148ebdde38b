"""Counted nouns read as English: "1 run", "2 runs", "0 schedules"."""

from __future__ import annotations

import pytest

from dgxmm.words import counted


@pytest.mark.parametrize(
    ("count", "noun", "said"),
    [(1, "run", "1 run"), (2, "run", "2 runs"), (0, "schedule", "0 schedules"),
     (1, "open proposal", "1 open proposal"), (2, "cold request", "2 cold requests"),
     (2, "query", "2 queries"), (1, "query", "1 query")],
    ids=["one", "two", "none", "two-words", "two-words-plural", "queries", "one-query"],
)  # fmt: skip
def test_it_says_a_count_with_its_noun(count: int, noun: str, said: str) -> None:
    assert counted(count, noun) == said
