"""Fidelity: two simulated hours of a small fleet, through the product and through the lab.

Issue 24's point 5. Three deployments (their sleeps and wakes scheduled, requests held for a
wake, one sleep deferred by recent traffic, one scheduled wake skipped) are played twice:

- **the product**: ``dgxmm serve`` on its fast clock (``DGXMM_FAST_CLOCK``, 60x: the two hours
  in two real minutes), its proxy, its schedule runner, and three process deployments running
  dgxmm's stand-in, whose ``/sleep`` and ``/wake_up`` take the real seconds given
  (``--hang-sleep``, ``--hang-wake``). The trace's requests go to the proxy at the instants
  the fast clock reads theirs (``fidelitykit.Rig``);
- **the lab**: ``replay_schedules`` on the same trace, with a fleet file of the same
  deployments and schedules whose durations are the stand-ins' as measured in the first
  run (each deployment's median sleep, from its pass's minute to its event, and median wake,
  as its event says it took).

What the product recorded (its deployment events and schedule rows, read over the API) is
read into the lab's ``Timeline`` and ``Ledger`` (``fidelitykit.observe``); its cold requests
are the ones its proxy held (``dgxmm_proxy_held_requests_total``). The two must agree:

- freed GiB-hours within 5 %, per deployment and for the fleet;
- the same number of wakes, per deployment;
- cold requests within the stand-ins' own jitter: the rig's jitter J is the largest distance
  of any one of its sleeps or wakes from the median the lab was given, or the latest its
  runner acted after its minute; a request within J of an instant where the lab's timeline
  goes from awake to not awake, or back, may fall on either side, and no other may.
  Measured on this 2-core shared machine (four runs, one beside the other lab tests on two
  workers): J is 7.0 to 9.4 simulated seconds (0.12 to 0.16 s of real time). No request of
  this trace lies that near an edge, so the cold counts must agree exactly, and they do.

Two differences the run shows. Neither is hidden, and neither moves a figure past the bounds
above. The printed report names both:

- the product's quiet check also takes the last request from its metrics. They note a
  request at the next minute's sample, so a sleep deferred by recent traffic goes ahead a
  minute later than the lab's, which uses the request's own arrival. Chat's third sleep:
  lab at +77:00 after 7 deferrals, product at +78:00 after 8 (its last: "a request 590 s
  ago"), which costs chat about 2 % of its freed GiB-hours;
- the lab counts 2 sleeps for chat where the product did 3. A request held while chat goes
  to sleep wakes it the instant the sleep ends, and ``Timeline.joined`` drops the asleep
  phase of no length, so ``Ledger.sleeps`` misses it (wakes are counted right).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from lab.fidelitykit import RATE, Member, Observed, Rig, awake_edges, jitter_us, median_us, observe
from lab.labkit import lab_deployment, lab_fleet

from dgxmm.decider.schedules import ResultKind, ScheduleAction
from dgxmm.lab import (
    LabFleet,
    LabSchedule,
    Ledger,
    ScheduleReplay,
    ServerTimes,
    Trace,
    read_fleet,
    replay_schedules,
)
from dgxmm.time_units import HOUR_US, MINUTE_US, SECOND_US

SLEEP, WAKE = ScheduleAction.SLEEP, ScheduleAction.WAKE
SPAN_US = 2 * HOUR_US
FREED_WITHIN = 0.05  # the bound


def m(minutes: int, seconds: int = 0) -> int:
    """Return minutes and seconds after the span's start, in seconds."""
    return minutes * 60 + seconds


# Each sleep's slot leaves at least 11 minutes after the minute of the request before it
# (the product's quiet check sees a request at the next minute's metrics sample, see the
# module), except chat's third, which recent traffic defers in both. Requests held for a
# wake come within the wake's time of the first; warm ones a minute or more after it ends.
FLEET = (
    Member(
        name="chat", gpu=0, awake_gib=40.0, asleep_gib=4.0, sleep_level=1,
        sleep_s=1.5, wake_s=1.0,  # 90 and 60 simulated seconds
        schedules=((SLEEP, m(20)), (SLEEP, m(37)), (SLEEP, m(70)), (WAKE, m(100))),
        requests=(
            m(1, 17), m(3, 41), m(6, 5), m(7, 50),
            m(20, 40), m(21, 10),  # while it goes to sleep: held, then woken
            m(24, 2),
            m(58, 33), m(58, 51),  # asleep: the first wakes it, the second joins the wake
            m(61, 20), m(63, 44), m(66, 12),  # the last defers the 70:00 sleep
            m(103, 19), m(106, 47), m(112, 3),  # after the scheduled wake
        ),
    ),
    Member(
        name="code", gpu=1, awake_gib=24.0, asleep_gib=2.0, sleep_level=1,
        sleep_s=0.3, wake_s=0.6,
        schedules=((SLEEP, m(25)), (SLEEP, m(70)), (WAKE, m(90)), (SLEEP, m(110))),
        requests=(
            m(2, 33), m(4, 58), m(12, 12),
            m(40, 44), m(41, 2),  # held: one wake
            m(47, 35),
            m(88, 21),  # woken by a request, so the 90:00 wake is skipped
            m(95, 16),
        ),
    ),
    Member(
        name="embed", gpu=2, awake_gib=16.0, asleep_gib=1.0, sleep_level=2,
        sleep_s=0.2, wake_s=0.4,  # a level-2 wake asks /wake_up twice
        schedules=((SLEEP, m(30)), (SLEEP, m(80))),
        requests=(
            m(0, 45), m(3, 52), m(7, 9), m(10, 36), m(13, 58),
            m(52, 8), m(52, 30),  # held: one wake
            m(58, 14), m(63, 47),
            m(115, 30),  # held: it ends the span awake
        ),
    ),
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_it_frees_what_the_lab_says_with_the_same_wakes_and_cold_requests(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, gpus=len(FLEET))
    try:
        ids = {member.name: rig.deploy(member) for member in FLEET}
        # The span begins on a minute a few real seconds ahead: the schedules are in by then.
        start_us = (rig.now_us() + 3 * RATE * SECOND_US) // MINUTE_US * MINUTE_US + MINUTE_US
        end_us = start_us + SPAN_US
        numbers: dict[int, int] = {}  # the product's schedule id -> the lab's number
        for member in FLEET:
            for action, offset in member.schedules:
                made = rig.schedule(ids[member.name], action, start_us + offset * SECOND_US)
                numbers[made] = len(numbers) + 1  # the lab numbers them in file order
        requests = [
            (start_us + offset * SECOND_US, member.model)
            for member in FLEET
            for offset in member.requests
        ]
        sent = rig.replay(requests)
        rig.sleep_until(end_us + MINUTE_US)
        rig.settled()
        held = rig.held_total()
        observed = {
            member.name: observe(
                rig.events(ids[member.name]),
                rig.schedules(ids[member.name]),
                start_us=start_us,
                end_us=end_us,
                sleep_level=member.sleep_level,
            )
            for member in FLEET
        }
    finally:
        rig.close()
    assert [s.status for s in sent] == [200] * len(requests), sent

    fleet_file = tmp_path / "fleet.json"
    fleet_file.write_text(json.dumps(_lab_fleet(observed).to_json(), indent=2))
    fleet = read_fleet(fleet_file)
    trace = Trace.of(requests)
    replays = replay_schedules(trace, fleet, start_us=start_us, end_us=end_us, seed=0)

    jitter = jitter_us(list(observed.values()))
    warm_s = float(np.median([s.latency_s for s in sent]))
    lines = [f"jitter J = {jitter / SECOND_US:.1f} simulated s ({jitter / SECOND_US / RATE:.3f} "
             f"real s); warm request {warm_s * 1000:.0f} ms real"]  # fmt: skip
    figures: dict[str, tuple[Ledger, Ledger, int]] = {}
    for member in FLEET:
        name = member.name
        seen, replay = observed[name], replays[name]
        footprint = fleet.footprint(name)
        mine = [s for s in sent if s.model == member.model]
        waits = np.asarray(
            [max(0.0, s.latency_s - warm_s) * RATE * SECOND_US for s in mine], dtype=np.int64
        )
        product = Ledger.of(name, footprint, seen.timeline, replay.arrivals_us, waits_us=waits)
        lab = replay.ledger(name, footprint)
        edges = np.asarray(awake_edges(replay.timeline), dtype=np.int64)
        near = sum(
            1
            for at in replay.arrivals_us
            if len(edges) and int(np.min(np.abs(edges - at))) <= jitter
        )
        figures[name] = (product, lab, near)
        slow = sum(1 for s in mine if s.latency_s - warm_s > 0.3)  # a wake takes 0.6 s or more
        lines.append(
            f"{name}: freed {product.freed_gib_h:.2f} GiB-h, lab {lab.freed_gib_h:.2f} "
            f"({_change(product.freed_gib_h, lab.freed_gib_h)}); wakes {len(seen.wakes)}, lab "
            f"{lab.wakes}; sleeps {len(seen.sleeps)}, lab {lab.sleeps}; cold {held.get(name, 0)} "
            f"held by the proxy ({slow} slow at the client), lab {lab.cold}, "
            f"{near} within J of an edge; waits p50 {product.wait_s(0.5):.0f} s, "
            f"lab {lab.wait_s(0.5):.0f} s"
        )
        lines += _decisions(seen, replay, numbers, start_us)
    product_freed = sum(p.freed_gib_h for p, _, _ in figures.values())
    lab_freed = sum(lab.freed_gib_h for _, lab, _ in figures.values())
    lines.append(f"fleet: freed {product_freed:.2f} GiB-h, lab {lab_freed:.2f} "
                 f"({_change(product_freed, lab_freed)})")  # fmt: skip
    report = "\n".join(lines)
    print(report)

    # The fleet did what the trace was made for, on both sides.
    assert all(lab.sleeps and lab.wakes and lab.cold for _, lab, _ in figures.values()), report
    for name, (product, lab, near) in figures.items():
        assert abs(product.freed_gib_h - lab.freed_gib_h) <= FREED_WITHIN * lab.freed_gib_h, (
            f"{name}: freed GiB-hours differ\n{report}"
        )
        assert len(observed[name].wakes) == lab.wakes, f"{name}: wakes differ\n{report}"
        assert abs(held.get(name, 0) - lab.cold) <= near, f"{name}: cold requests differ\n{report}"
    assert abs(product_freed - lab_freed) <= FREED_WITHIN * lab_freed, report


def _lab_fleet(observed: dict[str, Observed]) -> LabFleet:
    """Return the lab's fleet: the same deployments, the stand-ins' measured durations."""
    deployments = []
    for member in FLEET:
        seen = observed[member.name]
        level = member.sleep_level
        # As a fleet file gives them, in seconds: the medians, the others the published ones.
        measured = {
            f"sleep_{level}": median_us(seen.sleeps) / SECOND_US,
            f"wake_{level}": median_us(seen.wakes) / SECOND_US,
        }
        # A member gives no level-2 memory: level 2 holds what level 1 does, as a file says.
        deployments.append(lab_deployment(
            member.name, model=member.model, gpus=(member.gpu,),
            memory_gib_awake=member.awake_gib, memory_gib_asleep=member.asleep_gib,
            memory_gib_asleep_2=member.asleep_gib, sleep_level=level, time_zone="UTC",
            schedules=tuple(
                LabSchedule(action=action, days=127, time=_hhmm(offset, seen), time_zone="UTC")
                for action, offset in member.schedules
            ),
            durations=ServerTimes().overridden(measured, "durations"),
        ))  # fmt: skip
    return lab_fleet(*deployments, gpus=len(FLEET))


def _hhmm(offset_s: int, seen: Observed) -> str:
    """Return the UTC HH:MM of a schedule ``offset_s`` after the span's start."""
    at_us = seen.timeline.start_us + offset_s * SECOND_US
    minutes = at_us // MINUTE_US % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _decisions(
    seen: Observed, replay: ScheduleReplay, numbers: dict[int, int], start_us: int
) -> list[str]:
    """Say, per schedule, how often each side deferred it and at which minute it ran."""
    lab_deferred = Counter(d.schedule for d in replay.decisions if d.kind is ResultKind.DEFERRED)
    lab_ran = {d.schedule: d.at_us for d in replay.decisions if d.kind is not ResultKind.DEFERRED}
    lines = []
    for schedule_id, ran in sorted(seen.done_at.items()):
        number = numbers[schedule_id]
        line = (
            f"  schedule {number}: product ran it at {_offset(ran, start_us)} after "
            f"{seen.deferred.get(schedule_id, 0)} deferral(s), lab at "
            f"{_offset(lab_ran.get(number), start_us)} after {lab_deferred[number]}"
        )
        if schedule_id in seen.reasons:
            line += f"; the product's last: {seen.reasons[schedule_id]!r}"
        lines.append(line)
    return lines


def _offset(at_us: int | None, start_us: int) -> str:
    if at_us is None:
        return "never"
    seconds = (at_us - start_us) // SECOND_US
    return f"+{seconds // 60}:{seconds % 60:02d}"


def _change(product: float, lab: float) -> str:
    return f"{(product - lab) / lab:+.1%}" if lab else "lab 0"
