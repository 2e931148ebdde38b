"""``explain`` against a replay: what the scheduler recorded for each time of a job, on a
manual clock, is what ``explain`` tells from the runs and the switches alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st
from support import at

from dgxmm.jobs import (
    Cause,
    CronSchedule,
    Job,
    JobKind,
    JobRun,
    RunContext,
    RunFact,
    Scheduler,
    SkipReason,
    Switch,
    Verdict,
    WorkloadStats,
    explain,
    place,
)

SECOND = 1_000_000
MINUTE = 60 * SECOND
LATENESS = MINUTE


class Timer:
    """A monotonic timer each run moves by its own duration."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Replay:
    """What a replay of ticks left: runs, switches, skip records, and the ticks' span."""

    runs: list[RunFact] = field(default_factory=list)
    switches: list[Switch] = field(default_factory=list)
    scheduler: Scheduler | None = None
    first: int = 0
    checked_until: int = 0


# A step: the gap since the last tick (mostly the host's 5 s, sometimes a stall), how long a
# run started at this tick takes, and whether job a is switched over after the tick.
steps = st.lists(
    st.tuples(
        st.sampled_from([5, 5, 5, 5, 20, 75, 190]),  # multiples of 5 s
        st.sampled_from([0, 3, 50, 70, 130]),
        st.booleans(),
    ),
    min_size=5,
    max_size=80,
)


def replay(schedule: str, zone: str, start: int, plan: list[tuple[int, int, bool]]) -> Replay:
    timer = Timer()
    scheduler = Scheduler(
        zone, WorkloadStats(), timer=timer, max_lateness=timedelta(microseconds=LATENESS)
    )
    seconds_of: dict[tuple[str, int], int] = {}  # (job, started at) -> how long its run takes

    def work(context: RunContext) -> None:
        timer.now += seconds_of[(context.name, context.started_at)]

    scheduler.add(Job("a", JobKind.USER, CronSchedule.parse(schedule), work, group="g"))
    scheduler.add(Job("b", JobKind.USER, CronSchedule.parse("*/3 * * * *"), work, group="g"))
    found = Replay(scheduler=scheduler, first=start)
    found.checked_until = start + sum(gap for gap, _, _ in plan) * SECOND
    running: list[tuple[int, JobRun]] = []  # (ends at, run)
    now = start
    scheduler.start_due(now)  # the first tick only plans

    def take_back(until: int) -> None:
        for end, run in sorted(running, key=lambda item: item[0]):
            if end <= until:
                running.remove((end, run))
                timer.now = 0.0
                result = run.run()
                scheduler.finish(result)
                found.runs.append(
                    RunFact(
                        id=run.token, job=run.name, scheduled=True,
                        scheduled_at=run.scheduled_at, started_at=run.started_at,
                        finished_at=result.finished_at, outcome=result.outcome,
                    )
                )  # fmt: skip

    # The plan, then ten quiet minutes of 5 s ticks, so that every time checked is settled.
    for gap, seconds, switch in [*plan, *[(5, 0, False)] * 120]:
        now += gap * SECOND
        take_back(now)
        for run in scheduler.start_due(now):
            seconds_of[(run.name, run.started_at)] = seconds
            running.append((now + seconds * SECOND, run))
        # A switch while the job waits for its group is seen at its next start, not at its
        # time: the test leaves that case out (explain tells the switch as at the time).
        waiting = scheduler.state("a").waiting_since is not None
        if switch and not waiting and now <= found.checked_until:
            on = not scheduler.get("a").enabled
            scheduler.set_enabled("a", on)
            found.switches.append(Switch(at_us=now, enabled=on))
    take_back(now + 3600 * SECOND)
    return found


def recorded(found: Replay, t: int) -> Cause | None:
    """What the replay recorded for job a's time ``t``: None when it ran.

    A time with no record of its own is covered by the skip before it (an overlap, a gap in
    the ticks, a switch), or passed while an earlier time waited to start: for its group (the
    group wait's record at that time), or for a late tick that started it at this very time.
    """
    if any(r.job == "a" and r.scheduled_at == t for r in found.runs):
        return None
    assert found.scheduler is not None
    skips = [s for s in found.scheduler.skips if s.name == "a" and s.at_us <= t]
    for run in found.runs:
        if run.job == "a" and run.scheduled_at < t <= run.started_at:
            waited = any(
                s.at_us == run.scheduled_at and s.reason is SkipReason.GROUP_BUSY for s in skips
            )
            return Cause.GROUP_BUSY if waited else Cause.OVERLAP
    assert skips, f"no record covers {t}"
    return Cause(skips[-1].reason.value)


@settings(max_examples=200, deadline=None)
@given(
    schedule=st.sampled_from(["* * * * *", "*/2 * * * *", "30 2 * * *", "*/5 2-3 * * *"]),
    zone=st.sampled_from(["UTC", "Europe/Berlin"]),
    start=st.sampled_from(
        # Ticks 5 s apart from :32 never fall on a whole minute: a start exactly the lateness
        # after its time, where a late tick and a short group wait look alike, is left out.
        [at("2026-06-01T01:57:32+00:00"), at("2026-03-29T00:58:12+00:00")]  # Berlin's gap
    ),
    plan=steps,
)
def test_explain_tells_what_a_replay_of_the_ticks_recorded(
    schedule: str, zone: str, start: int, plan: list[tuple[int, int, bool]]
) -> None:
    found = replay(schedule, zone, start, plan)
    info = ZoneInfo(zone)
    cron = CronSchedule.parse(schedule)
    own = [r for r in found.runs if r.job == "a"]
    others = [r for r in found.runs if r.job != "a"]
    t = cron.next_after(found.first, info)
    while t <= found.checked_until:
        told = explain(
            place(cron, info, t), name="a", now_us=found.checked_until + 3600 * SECOND,
            max_lateness_us=LATENESS, runs=own, group_runs=others, switches=found.switches,
        )  # fmt: skip
        expected = recorded(found, t)
        if expected is None:
            assert told.verdict is Verdict.RAN, (t, told)
            assert told.run is not None
            assert told.run.scheduled_at == t
        else:
            assert (told.verdict, told.cause) == (Verdict.SKIPPED, expected), (t, told)
        # With the scheduler's own records as well, the answer is the same.
        assert found.scheduler is not None
        with_records = explain(
            place(cron, info, t), name="a", now_us=found.checked_until + 3600 * SECOND,
            max_lateness_us=LATENESS, runs=own, group_runs=others, switches=found.switches,
            skips=list(found.scheduler.skips),
        )  # fmt: skip
        assert (with_records.verdict, with_records.cause) == (told.verdict, told.cause), (t,)
        t = cron.next_after(t, info)


def test_a_time_a_gap_moved_and_the_second_pass_of_a_repeated_hour_are_told() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    nightly = CronSchedule.parse("30 2 * * *")
    moved = place(nightly, berlin, at("2026-03-29T03:00:00+02:00"))
    assert (moved.is_time, moved.moved) == (True, True)
    again = place(nightly, berlin, at("2026-10-25T02:30:00+01:00"))
    assert (again.is_time, again.repeated) == (False, True)
    assert again.time_us == at("2026-10-25T02:30:00+02:00")
    none = place(nightly, berlin, at("2026-06-01T12:00:00+02:00"))
    assert (none.time_us, none.next_us) == (None, at("2026-06-02T02:30:00+02:00"))
    told = explain(none, name="n", now_us=at("2026-06-03T00:00:00+02:00"), max_lateness_us=MINUTE)
    assert told.verdict is Verdict.NOT_A_TIME


def test_skip_reason_values_are_causes() -> None:
    assert {reason.value for reason in SkipReason} <= {cause.value for cause in Cause}
