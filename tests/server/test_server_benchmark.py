"""``benchmarks/server.py`` runs end to end at tiny counts and prints every figure of issue 28.

Only that it prints each figure's line is asserted; the timings it prints are not (machines
here are shared and noisy; timings never go into tests).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "server.py"

FIGURES = (
    "defines one at a time (total)",
    "catalog import of 30 jobs",
    "a define at 40 jobs",
    "GET /api/jobs?limit=100, 4 clients, a job running (p99)",
    "GET /api/jobs unpaged, 46 of 46 user jobs listed (p99)",
    "GET /api/changes, 3 clients every 2 s, jobs running (p99)",
    "GET /api/changes, 3 clients, and a metrics pass (p99)",
    "the Deployments page, 5 deployments (p99)",
    "schedule_runner pass, 5 deployments with a schedule",
    "metrics_rollup pass, scraping 5 deployments",
)


@pytest.mark.slow
def test_it_prints_every_figure_with_its_floor_and_goal() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--small"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for figure in FIGURES:
        found = [line for line in lines if figure in line]
        assert len(found) == 1, f"no line for {figure!r} in:\n{done.stdout}"
        assert found[0].rstrip().endswith(("ok", "MISSED")), found[0]
