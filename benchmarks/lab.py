"""The savings lab's speed: 4 weeks of 50 deployments and about a million requests, replayed.

Issue 24's target: replaying 4 weeks of 50 deployments with 1 million requests takes under
60 s on a 2-core machine. The fleet: 50 deployments of 72 GiB on 80 GiB GPUs (one each), in
Europe/Berlin, each with a sleep at 20:00 and a wake at 07:30 on weekdays. The trace: the lab's
own seeded workloads (office hours, diurnal, bursty, rare, taking turns), scaled so the fleet
receives about a million requests. Printed: the time of each step and of the whole
comparison (every policy: always-on, the three anchors, the schedules, the oracle), and the
requests replayed per second, beside the time to merely read the trace's arrivals per
deployment (the floor: a replay cannot be faster than looking at each request once).

    .venv/bin/python benchmarks/lab.py [--deployments 50] [--weeks 4] [--requests 1000000]
                                       [--workers 2]
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np

from dgxmm.clock import to_us
from dgxmm.lab import Policy, Trace, compare, parse_fleet
from dgxmm.lab.traces.workloads import bursty, diurnal, office_hours, rare


def fleet_document(count: int) -> dict[str, object]:
    weekdays = ["mon", "tue", "wed", "thu", "fri"]
    return {
        "gpus": [{"index": i, "name": "H100", "memory_gib": 80} for i in range(count)],
        "deployments": [
            {
                "name": f"d{i:02d}",
                "model": f"m{i:02d}",
                "gpus": [i],
                "memory_gib_awake": 72,
                "memory_gib_asleep": 2,
                "time_zone": "Europe/Berlin",
                "schedules": [
                    {"action": "sleep", "days": weekdays, "time": "20:00"},
                    {"action": "wake", "days": weekdays, "time": "07:30"},
                ],
            }
            for i in range(count)
        ],
    }


def build_trace(count: int, start_us: int, weeks: int, wanted: int) -> Trace:
    makers = (office_hours, diurnal, bursty, rare)
    parts = [
        makers[i % 4](f"m{i:02d}", start_us=start_us, weeks=weeks, seed=i) for i in range(count)
    ]
    total = sum(len(part) for part in parts)
    # Repeat each part's arrivals, shifted by a few seconds, until the fleet gets about
    # ``wanted`` requests: the workloads' own rates are a few thousand a week.
    copies = max(1, round(wanted / max(total, 1)))
    at: list[np.ndarray] = []
    model: list[np.ndarray] = []
    for index, part in enumerate(parts):
        shifted = np.concatenate([part.at_us + 3_000_000 * c for c in range(copies)])
        at.append(shifted)
        model.append(np.full(len(shifted), index, dtype=np.int64))
    arrivals = np.concatenate(at)
    models = np.concatenate(model)
    order = np.argsort(arrivals, kind="stable")
    none = np.full(len(arrivals), -1, dtype=np.int64)
    return Trace(
        models=tuple(f"m{i:02d}" for i in range(count)),
        at_us=arrivals[order],
        model=models[order],
        input_tokens=none,
        output_tokens=none,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=50)
    parser.add_argument("--weeks", type=int, default=4)
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2, help="processes (this machine: 2)")
    args = parser.parse_args()
    start = to_us(datetime(2026, 6, 1, tzinfo=ZoneInfo("Europe/Berlin")))
    end = start + args.weeks * 7 * 86_400_000_000

    began = time.perf_counter()
    trace = build_trace(args.deployments, start, args.weeks, args.requests)
    fleet = parse_fleet(fleet_document(args.deployments), "benchmark")
    made = time.perf_counter() - began
    trace = Trace(
        models=trace.models,
        at_us=trace.at_us[trace.at_us < end],
        model=trace.model[trace.at_us < end],
        input_tokens=trace.input_tokens[trace.at_us < end],
        output_tokens=trace.output_tokens[trace.at_us < end],
    )

    began = time.perf_counter()
    for name in trace.models:  # the floor: each deployment's requests looked at once
        for _ in trace.arrivals_of(name).tolist():
            pass
    floor = time.perf_counter() - began

    began = time.perf_counter()
    found = compare(trace, fleet, start_us=start, end_us=end, seed=1, workers=args.workers)
    replayed = time.perf_counter() - began

    print(f"{len(trace):,} requests, {args.deployments} deployments, {args.weeks} weeks, "
          f"{args.workers} worker process(es) for dgxmm's policies")  # fmt: skip
    print(f"  trace and fleet built:       {made:6.2f} s")
    print(f"  floor (each request once):   {floor:6.2f} s")
    print(f"  every policy compared:       {replayed:6.2f} s   "
          f"({len(trace) / replayed:,.0f} requests/s per 10 policies; "
          f"{replayed / max(floor, 1e-9):.1f}x the floor; target < 60 s)")  # fmt: skip
    print()
    print(f"{'policy':26} {'freed GiB-h':>12} {'of oracle':>10} {'cold %':>8}")
    for policy in Policy:
        total = found.total(policy)
        print(f"{policy.value:26} {total.freed_gib_h:12.0f} "
              f"{found.share_of_oracle(policy):10.1%} {total.cold_share:8.2%}")  # fmt: skip


if __name__ == "__main__":
    main()
