"""The report: each rate's table, the streamed first bytes, the gone clients, issue 27's targets."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import uvloop
from http_load import percentile

from proxykit.cpu import cpu_seconds, idle_rates
from proxykit.load import first_bytes, gone_clients, open_loop


def _pct(values: list[float], p: float) -> float:
    return percentile(sorted(values), p) * 1000


def _rotations(names: list[str], rounds: int) -> list[list[str]]:
    return [names[r % len(names) :] + names[: r % len(names)] for r in range(rounds)]


def at_rate(
    urls: dict[str, str], pids: dict[str, int], idle: dict[str, float], rate: float,
    seconds: float, rounds: int,
) -> dict[str, Any]:  # fmt: skip
    """Run the open loop at ``rate``; print the table; return the figures by target.

    CPU per request is the process's CPU over a round, less its idle rate over the round's
    time, over the requests answered.
    """
    names = [name for name in ("direct", "haproxy", "dgxmm") if name in urls]
    seen: dict[str, dict[str, Any]] = {
        name: {"latencies": [], "errors": 0, "count": 0, "rates": [], "cpu": 0.0} for name in names
    }
    for order in _rotations(names, rounds):
        for name in order:
            before = cpu_seconds(pids[name]) if name in pids else 0.0
            began = time.perf_counter()
            result = uvloop.run(open_loop(urls[name], rate, seconds))
            after = cpu_seconds(pids[name]) if name in pids else 0.0
            after -= idle.get(name, 0.0) * (time.perf_counter() - began)
            figures = seen[name]
            figures["latencies"] += result["latencies"]
            figures["errors"] += result["errors"]
            figures["count"] += result["count"]
            figures["rates"].append(result["served_rate"])
            figures["cpu"] += after - before
    print(f"\n{rate:g} req/s open loop, {rounds} rounds of {seconds:g} s (ms)")
    print(f"{'target':>8} {'p50':>7} {'p99':>8} {'p50 +':>7} {'p99 +':>8} {'errors':>6} "
          f"{'served':>7} {'CPU/req':>8}")  # fmt: skip
    base50, base99 = _pct(seen["direct"]["latencies"], 0.5), _pct(seen["direct"]["latencies"], 0.99)
    out: dict[str, Any] = {}
    for name in names:
        figures = seen[name]
        p50, p99 = _pct(figures["latencies"], 0.5), _pct(figures["latencies"], 0.99)
        served = min(figures["rates"]) / rate
        cpu = figures["cpu"] / max(1, len(figures["latencies"])) * 1000 if name in pids else None
        added = "" if name == "direct" else f"{p50 - base50:>+7.2f} {p99 - base99:>+8.2f}"
        print(f"{name:>8} {p50:>7.2f} {p99:>8.2f} {added:>16} {figures['errors']:>6} "
              f"{served:>6.0%} {'' if cpu is None else f'{cpu:>8.3f}'}")  # fmt: skip
        out[name] = {"p99_added": p99 - base99, "p99": p99, "errors": figures["errors"],
                     "served": served, "cpu_ms": cpu}  # fmt: skip
    return out


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(urls: dict[str, str], pids: dict[str, int], slow: str, args: argparse.Namespace) -> None:
    idle = idle_rates(pids, 3.0)
    print("idle CPU (ms a second, with no request): "
          + ", ".join(f"{name} {rate * 1000:.1f}" for name, rate in idle.items()))  # fmt: skip
    at200 = at_rate(urls, pids, idle, 200.0, args.seconds, args.rounds)
    at1000 = at_rate(urls, pids, idle, 1000.0, args.seconds, args.rounds)
    print("\nstreamed time to first byte, one at a time (ms; median and p99)")
    first: dict[str, float] = {}
    for name, url in urls.items():
        times = uvloop.run(first_bytes(url, args.first_bytes))
        first[name] = statistics.median(times) * 1000
        print(f"{name:>8} {first[name]:>7.2f} {_pct(times, 0.99):>7.2f}")
    print("\nclients that go away: 20 slow streams closed after their first chunk; seconds until "
          "the server runs none")  # fmt: skip
    gone: dict[str, float] = {}
    for name, url in urls.items():
        target = slow if name == "direct" else url
        gone[name] = uvloop.run(gone_clients(target, slow, 20))
        print(f"{name:>8} {gone[name]:>7.2f}")

    print("\nissue 27's targets")
    ours = at200["dgxmm"]
    line = f"  1. p99 added at 200 req/s: {ours['p99_added']:+.2f} ms; at most 2 ms"
    ok = ours["p99_added"] <= 2.0
    if "haproxy" in at200:
        theirs = max(at200["haproxy"]["p99_added"], 0.2)
        ratio = max(ours["p99_added"], 0.0) / theirs
        line += f", and at most 3x HAProxy's ({theirs:+.2f} ms): {ratio:.1f}x"
        ok = ok and ratio <= 3.0
    print(line + f": {verdict(ok)}")
    cpu = ours["cpu_ms"]
    versus = ""
    if "haproxy" in at200 and at200["haproxy"]["cpu_ms"]:
        theirs_cpu = at200["haproxy"]["cpu_ms"]
        versus = f" (HAProxy {theirs_cpu:.3f} ms: {cpu / theirs_cpu:.1f}x)"
    print(f"  2. CPU per request: {cpu:.3f} ms{versus}; at most 0.5 ms: {verdict(cpu <= 0.5)}")
    big = at1000["dgxmm"]
    held = big["errors"] == 0 and big["served"] >= 0.95
    print(f"  3. 1,000 req/s: {big['errors']} errors, served {big['served']:.0%} of offered, "
          f"p99 {big['p99']:.2f} ms: {verdict(held)}")  # fmt: skip
    if "haproxy" in first:
        more = first["dgxmm"] - first["haproxy"]
        print(f"  4. time to first byte: {more:+.2f} ms over HAProxy's; within 1 ms: "
              f"{verdict(more <= 1.0)}")  # fmt: skip
    floor = gone["direct"]
    print(f"  5. gone clients: the server ran none {gone['dgxmm']:.2f} s after they left "
          f"(direct {floor:.2f} s): {verdict(gone['dgxmm'] <= floor + 0.5)}")  # fmt: skip
