"""Two processes on one data directory: each flush adds its runs, none overwrites another's."""

from __future__ import annotations

from collections.abc import Callable

from support import at

from dgxmm.jobs import Outcome, RunResult, SkipReason, SkipRecord, Tier
from dgxmm.store import Store


def run_at(iso: str, *, name: str = "cp", outcome: Outcome = Outcome.SUCCEEDED) -> RunResult:
    return RunResult(
        name=name, token=1, scheduled_at=at(iso), started_at=at(iso), duration_us=1_000,
        outcome=outcome,
    )  # fmt: skip


def test_a_cli_run_survives_the_servers_next_flush(open_store: Callable[..., Store]) -> None:
    # The found defect: the server's next statistics flush overwrote the CLI's run.
    server, cli = open_store(), open_store()
    server.workload_stats.record_run(run_at("2026-03-02T10:01:00+00:00"))
    server.flush_stats()
    cli.workload_stats.record_run(run_at("2026-03-02T10:01:30+00:00", outcome=Outcome.FAILED))
    cli.workload_stats.record_skip(
        SkipRecord(name="cp", at_us=at("2026-03-02T10:01:00+00:00"), reason=SkipReason.CLAIMED)
    )
    cli.flush_stats()
    server.workload_stats.record_run(run_at("2026-03-02T10:02:00+00:00"))
    server.flush_stats()
    # The server holds the sum now: its list and history show the CLI's run.
    (hour,) = server.workload_stats.history("cp", Tier.HOURS)
    assert (hour.count, hour.failures) == (3, 1)
    minutes = server.workload_stats.history("cp", Tier.MINUTES)
    assert [(b.count, b.failures) for b in minutes] == [(2, 1), (1, 0)]
    assert server.workload_stats.skips("cp") == {SkipReason.CLAIMED: 1}
    last = server.workload_stats.last_run("cp")
    assert last is not None
    assert last.started_at == at("2026-03-02T10:02:00+00:00")
    # And a third process opened now reads all of it from the file.
    (again,) = open_store().workload_stats.history("cp", Tier.HOURS)
    assert again.count == 3


def test_a_flush_picks_up_another_process_changes_with_nothing_of_its_own(
    open_store: Callable[..., Store],
) -> None:
    server, cli = open_store(), open_store()
    cli.workload_stats.record_run(run_at("2026-03-02T10:01:30+00:00"))
    cli.workload_stats.record_skip(
        SkipRecord(name="cp", at_us=at("2026-03-02T10:03:00+00:00"), reason=SkipReason.CLAIMED)
    )
    cli.flush_stats()
    assert server.flush_stats() is True
    assert server.workload_stats.counts("cp", at("2026-03-02T10:05:00+00:00")).last_hour == 1
    assert server.workload_stats.skips("cp") == {SkipReason.CLAIMED: 1}
    assert server.flush_stats() is False  # nothing new on either side
