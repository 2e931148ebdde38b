"""The external backend against a stand-in the test runs itself (dgxmm does not own it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fleet.fleetkit import TEST_TIMEOUTS
from support import PATIENCE_S, StandinProcess, free_port

from dgxmm.clock import ManualClock, SystemClock
from dgxmm.errors import BackendError, DefinitionError, ServerGone
from dgxmm.fleet import (
    BackendKind,
    ExternalBackend,
    Health,
    SleepState,
    StopOutcome,
    wait_until_healthy,
)

Start = Callable[..., StandinProcess]
Make = Callable[..., ExternalBackend]


@pytest.fixture
def external() -> Iterator[Make]:
    """Make external backends named 'remote'; their connections are closed after the test."""
    made: list[ExternalBackend] = []

    def make(url: str, clock: ManualClock | None = None) -> ExternalBackend:
        backend = ExternalBackend(
            name="remote", base_url=url, timeouts=TEST_TIMEOUTS, clock=clock or SystemClock()
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


def test_it_drives_a_server_it_does_not_own(standin: Start, external: Make) -> None:
    server = standin("--latency", "10")
    clock = ManualClock(1_800_000_000_000_000)
    backend = external(server.base_url + "/", clock)
    assert backend.kind is BackendKind.EXTERNAL
    assert backend.base_url == server.base_url  # the trailing slash is dropped
    assert not backend.owns_process
    backend.start()
    wait_until_healthy(backend, PATIENCE_S)
    assert backend.reattach().health is Health.HEALTHY
    assert backend.served_models() == ["standin-model"]

    server.client.post("/v1/chat/completions", json={"messages": [{"role": "user"}]})
    sample = backend.sample()
    assert sample.taken_at_us == 1_800_000_000_000_000
    assert sample.requests_finished_total == 1
    assert sample.latency_count == 1
    assert sample.sleep_state is SleepState.AWAKE

    backend.sleep()
    assert backend.is_sleeping()
    assert backend.sample().sleep_state is SleepState.WEIGHTS_OFFLOADED
    backend.wake()
    assert not backend.is_sleeping()

    assert backend.stop() is StopOutcome.NOT_OWNED
    assert server.client.get("/health").status_code == 200  # still running


def test_a_server_that_went_away_is_gone(standin: Start, external: Make) -> None:
    server = standin()
    backend = external(server.base_url)
    assert backend.check_health().is_healthy
    server.kill()
    check = backend.check_health()
    # A loading vLLM refuses connections too: a health check says unreachable, not gone.
    assert check.health is Health.UNREACHABLE
    assert check.detail == "connection refused"
    with pytest.raises(ServerGone) as gone:
        backend.sleep()
    assert str(gone.value).startswith(
        f"sleep (POST /sleep?level=1&mode=wait) on deployment 'remote' (external, "
        f"{server.base_url}): connection refused"
    )
    with pytest.raises(ServerGone):
        backend.fetch_metrics()


def test_the_gate_waits_for_a_loading_server_then_gives_up(standin: Start, external: Make) -> None:
    server = standin("--startup-delay", "600")
    backend = external(server.base_url)
    assert backend.check_health().health is Health.UNHEALTHY
    with pytest.raises(BackendError) as failure:
        wait_until_healthy(backend, 1.0)
    assert "not healthy within 1 s (last health check: unhealthy, 503 Service Unavailable)" in (
        str(failure.value)
    )


def test_the_gate_keeps_waiting_while_nothing_listens_yet(external: Make) -> None:
    backend = external(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(BackendError) as failure:
        wait_until_healthy(backend, 1.0)
    assert not isinstance(failure.value, ServerGone)
    assert "unreachable, connection refused" in str(failure.value)


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("127.0.0.1:8000", id="no-scheme"),
        pytest.param("ftp://host:21", id="ftp"),
        pytest.param("http://", id="no-host"),
        pytest.param("http://host:8000/?x=1", id="query"),
        pytest.param("http://host:notaport", id="bad-port"),
    ],
)
def test_a_base_url_that_cannot_work_is_refused(url: str, external: Make) -> None:
    with pytest.raises(DefinitionError) as refused:
        external(url)
    assert refused.value.field == "base_url"


def test_a_base_url_may_carry_a_path_prefix(external: Make) -> None:
    backend = external("https://gpu-box.internal:8443/vllm/")
    assert backend.base_url == "https://gpu-box.internal:8443/vllm"
