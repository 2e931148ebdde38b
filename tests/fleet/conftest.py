"""Fixtures for the fleet tests: stand-in processes and process backends, cleaned up after."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fleet.fleetkit import TEST_TIMEOUTS, ensure_gone
from support import STANDIN, free_port

from dgxmm.clock import SystemClock
from dgxmm.fleet import ProcessBackend, ProcessSpec


@pytest.fixture
def process_backend(tmp_path: Path) -> Iterator[Callable[..., ProcessBackend]]:
    """Make process backends (a stand-in by default); stop what they started after the test."""
    made: list[ProcessBackend] = []

    def make(
        *args: str,
        argv: tuple[str, ...] | None = None,
        name: str = "llama",
        run_dir: Path | None = None,
        port: int | None = None,
        stop_grace_s: float = 10.0,
        env: dict[str, str] | None = None,
    ) -> ProcessBackend:
        command = argv or (*STANDIN, "--port", "{port}", "--model", name, *args)
        spec = ProcessSpec(argv=command, port=port or free_port(), env=env or {})
        backend = ProcessBackend(
            name=name,
            spec=spec,
            run_dir=run_dir or tmp_path / name,
            timeouts=TEST_TIMEOUTS,
            stop_grace_s=stop_grace_s,
            clock=SystemClock(),
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        pid = backend.pid
        backend.stop(grace_s=2.0)
        backend.close()
        if pid is not None:
            ensure_gone(pid)
