"""A host's moves in memory: the jobs each touched, or None when the rows may be others."""

from __future__ import annotations

from dgxmm.server.host.moves import KEPT_MOVES, Moves


def test_it_unites_the_jobs_of_the_moves_since_a_count() -> None:
    moves = Moves()
    moves.moved(["a"])
    seen = moves.count
    assert moves.keys_since(seen) == frozenset()
    moves.moved(["b", "c"])
    moves.moved(["a"])
    assert moves.keys_since(seen) == frozenset({"a", "b", "c"})
    assert moves.keys_since(0) == frozenset({"a", "b", "c"})
    assert moves.keys_since(moves.count + 5) == frozenset()  # a count from another host life


def test_a_sync_or_a_move_forgotten_names_nothing() -> None:
    moves = Moves()
    moves.moved(["a"])
    moves.moved(None)
    moves.moved(["b"])
    assert moves.keys_since(0) is None
    assert moves.keys_since(2) == frozenset({"b"})
    for _ in range(KEPT_MOVES):
        moves.moved(["c"])
    assert moves.keys_since(2) is None  # its moves are no longer kept
    assert moves.keys_since(moves.count - 10) == frozenset({"c"})
