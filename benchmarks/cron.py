"""Microseconds per `next_after`, side by side with cronsim and croniter, in one process.

Each library walks the same expression from 2026-01-01 00:00 in Europe/Berlin, asking for the
next fire time after the previous one, the same number of times; the best of several repeats
counts. Then the fire times the three produced are compared, and any difference is printed.

    .venv/bin/python benchmarks/cron.py [--repeats N] [--scale F]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from croniter import croniter
from cronsim import CronSim

from dgxmm.clock import to_us
from dgxmm.jobs import CronSchedule

ZONE = ZoneInfo("Europe/Berlin")
START = datetime(2026, 1, 1, tzinfo=ZONE)


@dataclass(frozen=True)
class Case:
    expr: str
    fires: int  # successive next times per run; spans weeks to centuries, see README
    vs_cronsim: float  # target: dgxmm's time at most this fraction of cronsim's
    vs_croniter: float = 1.0  # and below croniter's


CASES = (
    Case("*/5 * * * *", 30_000, 1 / 3),  # 104 days: crosses 2026-03-29
    Case("0 3 * * *", 1_500, 1 / 3),  # 4 years: 8 transitions
    Case("0 0 29 2 *", 60, 1 / 10),  # 2028 to 2272: skips 2100, 2200
    Case("0 0 1-7 * 1", 2_000, 1 / 2),  # 16 years: Vixie's OR of the day fields
)


# -- one walk per library: `fires` successive next times, yielded as epoch microseconds ------


def walk_dgxmm(expr: str, fires: int) -> Iterator[int]:
    schedule = CronSchedule.parse(expr)
    t = to_us(START)
    for _ in range(fires):
        t = schedule.next_after(t, ZONE)
        yield t


def walk_cronsim(expr: str, fires: int) -> Iterator[int]:
    it = CronSim(expr, START)
    for _ in range(fires):
        yield to_us(next(it))


def walk_croniter(expr: str, fires: int) -> Iterator[int]:
    it = croniter(expr, START)  # day_or=True by default: Vixie's OR
    for _ in range(fires):
        yield to_us(it.get_next(datetime))


# The timed loops: the same calls without the conversion to microseconds.


def run_dgxmm(expr: str, fires: int) -> None:
    schedule = CronSchedule.parse(expr)
    next_after = schedule.next_after
    t = to_us(START)
    for _ in range(fires):
        t = next_after(t, ZONE)


def run_cronsim(expr: str, fires: int) -> None:
    it = CronSim(expr, START)
    for _ in range(fires):
        next(it)


def run_croniter(expr: str, fires: int) -> None:
    it = croniter(expr, START)
    get_next = it.get_next
    for _ in range(fires):
        get_next(datetime)


LIBRARIES: dict[str, tuple[Callable[[str, int], None], Callable[[str, int], Iterator[int]]]] = {
    "dgxmm": (run_dgxmm, walk_dgxmm),
    "cronsim": (run_cronsim, walk_cronsim),
    "croniter": (run_croniter, walk_croniter),
}


def best_us_per_call(run: Callable[[str, int], None], case: Case, repeats: int) -> float:
    """Return the best time of `repeats` runs, in microseconds per next time."""
    run(case.expr, case.fires)  # warm up: caches, zone data
    best = float("inf")
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter_ns()
            run(case.expr, case.fires)
            best = min(best, time.perf_counter_ns() - start)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best / 1000 / case.fires


def local(t_us: int) -> str:
    return datetime.fromtimestamp(t_us / 1e6, ZONE).isoformat()


def compare(case: Case) -> list[str]:
    """Return a warning line for each library whose fire times differ from dgxmm's."""
    times = {name: list(walk(case.expr, case.fires)) for name, (_, walk) in LIBRARIES.items()}
    ours = times["dgxmm"]
    warnings = []
    for name, theirs in times.items():
        differ = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
        if differ:
            i = differ[0]
            warnings.append(
                f"WARNING {case.expr!r}: {name} differs from dgxmm at {len(differ)} of "
                f"{case.fires} fire times; first #{i}: dgxmm {local(ours[i])}, "
                f"{name} {local(theirs[i])}"
            )
    return warnings


def verdict(ratio: float, target: float, *, strict: bool) -> str:
    met = ratio < target if strict else ratio <= target
    return "ok" if met else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per library; best counts")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the fires per run")
    args = parser.parse_args()
    cases = [
        Case(c.expr, max(1, round(c.fires * args.scale)), c.vs_cronsim, c.vs_croniter)
        for c in CASES
    ]

    print(
        f"next_after in {ZONE.key}, successive fire times from {START.isoformat()}, "
        f"best of {args.repeats} runs; microseconds per next time"
    )
    header = (
        f"{'expression':<14} {'fires':>6} {'dgxmm':>8} {'cronsim':>8} {'croniter':>9}  "
        f"{'dgxmm/cronsim (target)':<26} {'dgxmm/croniter (target)':<26}"
    )
    print(header)
    print("-" * len(header))
    warnings: list[str] = []
    for case in cases:
        us = {
            name: best_us_per_call(run, case, args.repeats) for name, (run, _) in LIBRARIES.items()
        }
        vs_cronsim = us["dgxmm"] / us["cronsim"]
        vs_croniter = us["dgxmm"] / us["croniter"]
        cronsim_cell = (
            f"{vs_cronsim:.3f} (<= {case.vs_cronsim:.3f}) "
            f"{verdict(vs_cronsim, case.vs_cronsim, strict=False)}"
        )
        croniter_cell = (
            f"{vs_croniter:.3f} (< {case.vs_croniter:.0f}) "
            f"{verdict(vs_croniter, case.vs_croniter, strict=True)}"
        )
        print(
            f"{case.expr:<14} {case.fires:>6} {us['dgxmm']:>8.2f} {us['cronsim']:>8.2f} "
            f"{us['croniter']:>9.2f}  {cronsim_cell:<26} {croniter_cell:<26}"
        )
        warnings += compare(case)
    print()
    if warnings:
        print("\n".join(warnings))
    else:
        print("All three libraries produced the same fire times for every case.")


if __name__ == "__main__":
    main()
