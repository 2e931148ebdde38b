"""Counted nouns read as English: "1 run", "2 runs", "0 schedules"."""

from __future__ import annotations

import pytest

from dgxmm.server.words import counted


@pytest.mark.parametrize(
    ("count", "noun", "said"),
    [(1, "run", "1 run"), (2, "run", "2 runs"), (0, "schedule", "0 schedules"),
     (1, "open proposal", "1 open proposal")],
    ids=["one", "two", "none", "two-words"],
)  # fmt: skip
def test_it_says_a_count_with_its_noun(count: int, noun: str, said: str) -> None:
    assert counted(count, noun) == said
