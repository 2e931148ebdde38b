"""What each policy frees and what it costs, on the lab's standard workloads (issue 24, point 6).

For each workload of ``dgxmm.lab.STANDARD`` (fixed seeds; the Azure hours tiled, credited in
docs/savings.md) one deployment of 72 GiB awake, 2 GiB asleep at level 1 and 1 GiB at level
2 on one 80 GiB GPU, with vLLM's published durations (``ServerTimes``' defaults), is replayed
for four weeks under every policy. Printed per workload and policy: the share of the
oracle's freed GiB-hours, the share of requests that met a cold model, the wait-seconds (the
total, and the mean and p99 over every request), and at each standard price W (0.01, 0.1, 1
GiB-hours a request-second) the cost ``GiB-h held + W x request-s waited`` over the oracle's
and over the lazy oracle's (found at that W; the other policies are replayed once). The office-hours
workload's deployment has schedules (a wake at 07:45 and a sleep at 18:30 on weekdays, in
Europe/Berlin); the others have none, so ``schedules`` is always-on there.

Then ``priced``'s targets (issue 42, point 7), at each standard price, its own replay at that
price: a cost below Ollama's stop, llama-swap's sleep, Knative and the ladder's defaults; at
most 1.2x the lazy oracle's; below 1.0x on office hours and diurnal (only waking ahead can).

And the targets, for dgxmm's best policy on each workload (the dgxmm policy that frees the
most among those with fewer cold requests than Ollama's 5-minute stop; ties to the fewer cold):

- at least 90 % of the oracle's freed GiB-hours;
- fewer cold requests than the 5-minute stop, while freeing more;
- on office hours, no cold request while its schedules keep it awake (the stray requests at
  night meet a sleeping model under any policy that frees the night: see docs/savings.md).

A missed target is printed with by how much. Nothing here is a test: a shared machine's
figures are reported, not asserted (docs/savings.md holds the table of a run).

    .venv/bin/python benchmarks/savings.py [--weeks 4] [--seed 1] [--only office-hours,...]
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from dgxmm.clock import to_us
from dgxmm.lab import STANDARD, Comparison, Phase, Policy, compare, parse_fleet
from dgxmm.lab.ledger import STANDARD_PRICES

DGXMM = (
    Policy.SCHEDULES,
    Policy.PROPOSALS,
    Policy.LADDER,
    Policy.LADDER_LEAD,
    Policy.HISTOGRAM,
    Policy.PRICED,
)
# Issue 42, point 7: priced below each of these at each standard price.
BEATEN = (Policy.OLLAMA, Policy.LLAMA_SWAP, Policy.KNATIVE, Policy.LADDER)
LAZY_MOST = 1.2  # and at most this times the lazy oracle's cost
AHEAD = ("office-hours", "diurnal")  # and below the lazy oracle's, where waking ahead can
ZONES = {
    "office-hours": "Europe/Berlin",
    "diurnal": "America/New_York",
    "azure-chat": "America/Los_Angeles",
    "azure-code": "America/Los_Angeles",
}
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri"]


def fleet_for(workload: str) -> dict[str, Any]:
    """Return the one-deployment fleet file a workload is replayed on."""
    schedules: list[dict[str, Any]] = []
    if workload == "office-hours":
        schedules = [
            {"action": "wake", "days": WEEKDAYS, "time": "07:45"},
            {"action": "sleep", "days": WEEKDAYS, "time": "18:30"},
        ]
    return {
        "gpus": [{"index": 0, "name": "H100", "memory_gib": 80}],
        "deployments": [
            {
                "name": workload,
                "model": workload,
                "gpus": [0],
                "memory_gib_awake": 72,
                "memory_gib_asleep": 2,
                "memory_gib_asleep_2": 1,
                "time_zone": ZONES.get(workload, "UTC"),
                "schedules": schedules,
            }
        ],
    }


def best(found: Comparison) -> Policy:
    """Return dgxmm's best policy: the most freed with fewer cold than Ollama's stop."""
    ollama = found.total(Policy.OLLAMA).cold
    fewer = [p for p in DGXMM if found.total(p).cold < ollama] or list(DGXMM)
    return max(fewer, key=lambda p: (round(found.share_of_oracle(p), 6), -found.total(p).cold))


def office_cold(found: Comparison, policy: Policy) -> int:
    """Return the office-hours requests that met a cold model inside the schedules' window."""
    zone = ZoneInfo(ZONES["office-hours"])
    (arrivals,) = found.arrivals.values()
    (timeline,) = found.timelines[policy]
    awake = timeline.phase_codes_at(arrivals) == list(Phase).index(Phase.AWAKE)
    cold = 0
    for at, warm in zip(arrivals.tolist(), awake.tolist(), strict=True):
        local = datetime.fromtimestamp(at / 1e6, zone)
        inside = local.weekday() < 5 and (7, 45) <= (local.hour, local.minute) < (18, 30)
        cold += inside and not warm
    return cold


def priced_targets(name: str, priced: list[Comparison]) -> list[str]:
    """Print ``priced``'s cost against its targets at each price; return the ones missed."""
    missed: list[str] = []
    for each in priced:
        mine = each.cost(Policy.PRICED)
        words = []
        for other in BEATEN:
            theirs = each.cost(other)
            words.append(f"{other.value} {mine / theirs:.2f}x" if theirs else other.value)
            if not mine < theirs:
                missed.append(f"{name} W={each.price:g}: priced costs {mine:.0f}, "
                              f"{other.value} {theirs:.0f} ({mine / theirs - 1:+.1%})")  # fmt: skip
        lazy = each.cost_ratio(Policy.PRICED, Policy.LAZY_ORACLE)
        most = 1.0 if name in AHEAD else LAZY_MOST
        if not (lazy < most if name in AHEAD else lazy <= most):
            missed.append(f"{name} W={each.price:g}: priced is {lazy:.2f}x the lazy oracle, "
                          f"{lazy - most:+.2f} over {most:g}x")  # fmt: skip
        print(f"  priced at W={each.price:g}: cost {mine:.0f}, {lazy:.2f}x the lazy oracle; "
              f"against {', '.join(words)}")  # fmt: skip
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated workload names")
    args = parser.parse_args()
    start = to_us(datetime(2026, 6, 1, tzinfo=ZoneInfo("UTC")))
    end = start + args.weeks * 7 * 86_400_000_000
    names = [n for n in STANDARD if not args.only or n in args.only.split(",")]
    misses: list[str] = []
    for name in names:
        began = time.perf_counter()
        trace = STANDARD[name](start, args.weeks)
        fleet = parse_fleet(fleet_for(name), f"{name} fleet")
        found = compare(trace, fleet, start_us=start, end_us=end, seed=args.seed)
        priced = [found.repriced(fleet, price, trace) for price in STANDARD_PRICES]
        took = time.perf_counter() - began
        print(f"\n{name}: {len(trace):,} requests over {args.weeks} weeks ({took:.1f} s)")
        costs = "".join(f"{f'W={price:g} /or /lazy':>24}" for price in STANDARD_PRICES)
        print(
            f"  {'policy':<26}{'of oracle':>10}{'cold %':>9}{'cold':>7}{'wait s':>11}"
            f"{'mean s':>9}{'p99 all':>9}{costs}"
        )
        for policy in Policy:
            total = found.total(policy)
            ratios = "".join(
                f"{each.cost(policy):>10.0f}{each.cost_ratio(policy, Policy.ORACLE):>7.2f}"
                f"{each.cost_ratio(policy, Policy.LAZY_ORACLE):>7.2f}"
                for each in priced
            )
            # The lazy oracle's own row is at each price's: its figures above are at 0.1.
            print(
                f"  {policy.value:<26}{found.share_of_oracle(policy):>10.1%}"
                f"{total.cold_share:>9.2%}{total.cold:>7}{total.wait_total_s:>11.0f}"
                f"{total.wait_mean_s:>9.3f}{total.wait_all_s(0.99):>9.2f}{ratios}"
            )
        top = best(found)
        share = found.share_of_oracle(top)
        mine, ollama = found.total(top), found.total(Policy.OLLAMA)
        print(f"  best dgxmm policy: {top.value}")
        if share < 0.9:
            misses.append(f"{name}: {top.value} frees {share:.1%} of the oracle's, "
                          f"{0.9 - share:.1%} short of 90 %")  # fmt: skip
        if not (mine.cold < ollama.cold and mine.freed_gib_h > ollama.freed_gib_h):
            misses.append(
                f"{name}: {top.value} has {mine.cold} cold against the 5-minute stop's "
                f"{ollama.cold} and frees {mine.freed_gib_h - ollama.freed_gib_h:+.0f} GiB-h "
                "against it"
            )
        if name == "office-hours":
            inside = {policy: office_cold(found, policy) for policy in DGXMM}
            words = ", ".join(f"{policy.value} {count}" for policy, count in inside.items())
            print(f"  cold inside the schedules' awake window: {words}")
            if inside[top]:
                misses.append(
                    f"{name}: {top.value} has {inside[top]} cold request(s) while its schedules "
                    f"keep it up (schedules alone: {inside[Policy.SCHEDULES]})"
                )
        misses.extend(priced_targets(name, priced))
    print("\ntargets:", "all met" if not misses else "missed")
    for miss in misses:
        print("  -", miss)


if __name__ == "__main__":
    main()
