"""The table the figures print: a header, one line a figure, and the medians under a p99."""

from __future__ import annotations


def header() -> None:
    print(f"{'figure':<58}{'measured':>14}{'floor':>14}{'ratio':>9}  {'goal':<24}")


def line(figure: str, value: str, floor: str, ratio: float | None, goal: str, ok: bool) -> None:
    ratio_text = "" if ratio is None else f"{ratio:.1f}x"
    print(
        f"{figure:<58}{value:>14}{floor:>14}{ratio_text:>9}  {goal:<24}{'ok' if ok else 'MISSED'}",
        flush=True,
    )


def p50(row: dict[str, float], floor: dict[str, float]) -> None:
    """Print the medians under a p99 figure: a p99 far above its p50 is a stall, not a cost."""
    print(f"    p50 {row['p50_ms']:.2f} ms, its floor's {floor['p50_ms']:.2f} ms", flush=True)
