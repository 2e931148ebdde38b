"""The process backend on real processes: start, gate, sleep, wake, stop, and after a restart.

The servers are stand-ins launched by the backend the way it would launch vLLM; the
stubborn ones are tiny Python scripts. No test asserts how long anything took.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fleet.fleetkit import pid_exists
from support import PATIENCE_S, free_port, wait_for

from dgxmm.errors import BackendError, Conflict, DefinitionError, ServerGone
from dgxmm.fleet import (
    Health,
    HealthCheck,
    ProcessBackend,
    ProcessSpec,
    SleepState,
    StopOutcome,
    wait_until_healthy,
)
from dgxmm.fleet.backends.pidfile import read_pid_file

Make = Callable[..., ProcessBackend]

IGNORES_SIGTERM = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    # Printed in two pieces: the log's first line (the command) must not match the marker.
    "print('ignoring', 'SIGTERM', flush=True)\n"
    "time.sleep(600)\n"
)
# The leader exits on SIGTERM, but leaves a child in its process group that ignores it.
LEAVES_A_STUBBORN_CHILD = (
    "import subprocess, sys, time\n"
    f"child = subprocess.Popen([sys.executable, '-c', {IGNORES_SIGTERM!r}])\n"
    "time.sleep(600)\n"
)


def test_it_starts_gates_sleeps_wakes_and_stops(process_backend: Make) -> None:
    backend = process_backend("--latency", "10", "--memory-gib", "8")
    backend.start()
    pid = backend.pid
    assert pid is not None
    assert pid_exists(pid)
    assert os.getpgid(pid) == pid  # a process group of its own
    wait_until_healthy(backend, PATIENCE_S)
    assert backend.check_health().health is Health.HEALTHY
    assert backend.is_sleeping() is False
    assert backend.served_models() == ["llama"]

    backend.sleep()
    assert backend.is_sleeping() is True
    assert backend.sample().sleep_state is SleepState.WEIGHTS_OFFLOADED

    backend.wake()
    assert backend.is_sleeping() is False
    assert backend.sample().sleep_state is SleepState.AWAKE

    assert backend.stop() is StopOutcome.TERMINATED
    assert not pid_exists(pid)
    assert not backend.pid_path.exists()
    assert backend.check_health().health is Health.GONE
    log = backend.log_path.read_text()
    assert "=== dgxmm: starting" in log
    assert "listening on" in log  # the server's own output went to the log
    assert "=== dgxmm: stopped with SIGTERM" in log


def test_the_pid_file_names_the_process(process_backend: Make) -> None:
    backend = process_backend()
    backend.start()
    record = read_pid_file(backend.pid_path)
    assert record is not None
    assert record.pid == backend.pid
    assert record.port == backend.spec.port
    assert str(backend.spec.port) in record.argv  # "{port}" was filled in
    stat = Path(f"/proc/{record.pid}/stat").read_text()
    assert int(stat.rsplit(")", 1)[1].split()[19]) == record.start_ticks
    assert json.loads(backend.pid_path.read_text())["pid"] == record.pid


def test_a_new_server_is_not_healthy_before_its_startup_delay(process_backend: Make) -> None:
    backend = process_backend("--startup-delay", "5")
    backend.start()
    first = backend.check_health()
    assert first.health in (Health.UNREACHABLE, Health.UNHEALTHY)
    wait_until_healthy(backend, PATIENCE_S)
    assert backend.check_health().is_healthy


def test_the_gate_fails_on_a_server_that_never_gets_healthy(process_backend: Make) -> None:
    backend = process_backend("--startup-delay", "600")
    backend.start()
    with pytest.raises(BackendError) as failure:
        wait_until_healthy(backend, 1.5)
    assert not isinstance(failure.value, ServerGone)
    message = str(failure.value)
    assert "start-up of deployment 'llama'" in message
    assert "not healthy within 1.5 s" in message
    assert backend.is_running()  # the gate reports; stopping is the deployer's call


def test_the_gate_fails_at_once_when_the_process_exits(process_backend: Make) -> None:
    script = "import sys; print('cannot load', 'the model', flush=True); sys.exit(3)"
    backend = process_backend(argv=(sys.executable, "-c", script))

    def start_and_gate() -> None:
        backend.start()  # may already see the exit
        wait_until_healthy(backend, PATIENCE_S)

    with pytest.raises(ServerGone) as failure:
        start_and_gate()
    message = str(failure.value)
    assert "exited with code 3" in message
    assert "cannot load the model" in message  # the log's last lines


def test_a_command_that_does_not_exist_is_a_clear_error(process_backend: Make) -> None:
    backend = process_backend(argv=("/nonexistent/vllm", "serve"))
    with pytest.raises(BackendError) as failure:
        backend.start()
    assert "cannot run '/nonexistent/vllm'" in str(failure.value)
    assert not backend.pid_path.exists()


def test_starting_twice_is_a_conflict(process_backend: Make) -> None:
    backend = process_backend()
    backend.start()
    with pytest.raises(Conflict, match="already running"):
        backend.start()


def test_stop_sends_sigkill_to_a_process_that_ignores_sigterm(
    process_backend: Make,
) -> None:
    backend = process_backend(argv=(sys.executable, "-c", IGNORES_SIGTERM))
    backend.start()
    wait_for(lambda: "ignoring SIGTERM" in backend.log_path.read_text(), "the handler")
    pid = backend.pid
    assert pid is not None
    assert backend.stop(grace_s=1.0) is StopOutcome.KILLED
    assert not pid_exists(pid)
    assert "stopped with SIGKILL after 1 s" in backend.log_path.read_text()


def test_stop_kills_what_the_server_left_in_its_process_group(
    process_backend: Make,
) -> None:
    backend = process_backend(argv=(sys.executable, "-c", LEAVES_A_STUBBORN_CHILD))
    backend.start()
    wait_for(lambda: "ignoring SIGTERM" in backend.log_path.read_text(), "the child")
    pid = backend.pid
    assert pid is not None
    children = wait_for(lambda: _children_of(pid), "the child process")
    assert backend.stop(grace_s=1.0) is StopOutcome.KILLED
    assert not pid_exists(pid)
    assert not any(pid_exists(child) for child in children)


def test_stopping_what_is_not_running_says_so(process_backend: Make) -> None:
    backend = process_backend()
    assert backend.stop() is StopOutcome.NOT_RUNNING


def test_a_new_backend_finds_the_running_server_after_a_restart(
    process_backend: Make, tmp_path: Path
) -> None:
    first = process_backend(run_dir=tmp_path / "run")
    first.start()
    wait_until_healthy(first, PATIENCE_S)
    pid = first.pid
    first.close()  # dgxmm "restarts": the old backend object is gone, the server is not

    again = process_backend(run_dir=tmp_path / "run", port=first.spec.port)
    check = again.reattach()
    assert check.health is Health.HEALTHY
    assert again.pid == pid
    again.sleep()
    assert again.is_sleeping() is True
    assert again.stop() is StopOutcome.TERMINATED
    assert pid is not None
    assert not pid_exists(pid)


def test_a_stale_pid_file_of_a_pid_now_used_by_another_process_is_ignored(
    process_backend: Make,
) -> None:
    backend = process_backend()
    backend.run_dir.mkdir(parents=True)
    # Our own pid, with a start time that is not ours: the pid was "reused".
    stale = {
        "pid": os.getpid(),
        "start_ticks": 1,
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        "argv": ["vllm", "serve"],
        "port": backend.spec.port,
        "started_at_us": 0,
    }
    backend.pid_path.write_text(json.dumps(stale))
    check = backend.reattach()
    assert check.health is Health.GONE
    assert "pid now belongs to another process" in check.detail
    assert not backend.pid_path.exists()
    assert backend.stop() is StopOutcome.NOT_RUNNING  # and we are still alive to see it


def test_a_pid_file_of_an_exited_process_is_stale(process_backend: Make, tmp_path: Path) -> None:
    first = process_backend(run_dir=tmp_path / "run")
    first.start()
    wait_until_healthy(first, PATIENCE_S)
    pid = first.pid
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: not pid_exists(pid), "the process to die")
    again = process_backend(run_dir=tmp_path / "run", port=first.spec.port)
    assert again.reattach().health is Health.GONE
    assert not again.pid_path.exists()


def test_a_killed_server_is_detected_as_gone(process_backend: Make) -> None:
    backend = process_backend()
    backend.start()
    wait_until_healthy(backend, PATIENCE_S)
    pid = backend.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)

    def gone() -> HealthCheck | None:
        check = backend.check_health()
        return check if check.health is Health.GONE else None

    check = wait_for(gone, "the health check to say GONE")
    assert "killed by SIGKILL" in check.detail
    with pytest.raises(ServerGone, match="sleep on deployment 'llama'"):
        backend.sleep()
    with pytest.raises(ServerGone):
        backend.sample()


def test_the_environment_and_the_port_reach_the_command(process_backend: Make) -> None:
    script = "import os, sys; print('val' + 'ue', os.environ['DGXMM_TEST_VALUE'], sys.argv[1:])"
    backend = process_backend(
        argv=(sys.executable, "-c", script, "--port", "{port}", '{"json": {"kept": 1}}'),
        env={"DGXMM_TEST_VALUE": "from-the-spec"},
    )
    backend.start()
    wait_for(lambda: "value from" in backend.log_path.read_text(), "the output")
    log = backend.log_path.read_text()
    port = backend.spec.port
    assert f"value from-the-spec ['--port', '{port}', '{{\"json\": {{\"kept\": 1}}}}']" in log


def test_output_is_appended_across_starts(process_backend: Make) -> None:
    backend = process_backend(argv=(sys.executable, "-c", "print('run')"))
    for _ in range(2):
        with contextlib.suppress(ServerGone):  # it may exit before the backend looks
            backend.start()
        wait_for(lambda: not backend.is_running(), "the script to end")
    assert backend.log_path.read_text().count("=== dgxmm: starting") == 2


@pytest.mark.parametrize(
    ("argv", "port", "field"),
    [
        pytest.param((), 8000, "argv", id="no-command"),
        pytest.param(("vllm", ""), 8000, "argv", id="empty-argument"),
        pytest.param(("vllm",), 0, "port", id="port-0"),
        pytest.param(("vllm",), 70000, "port", id="port-too-big"),
    ],
)
def test_a_spec_that_cannot_run_is_refused(argv: tuple[str, ...], port: int, field: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        ProcessSpec(argv=argv, port=port)
    assert refused.value.field == field


def test_a_spec_has_a_base_url() -> None:
    port = free_port()
    assert ProcessSpec(argv=("x",), port=port).base_url == f"http://127.0.0.1:{port}"
    assert ProcessSpec(argv=("x",), port=port, host="::1").base_url == f"http://[::1]:{port}"


def _children_of(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(child) for child in path.read_text().split()]
    except OSError:
        return []


def test_the_ray_actor_marks_the_log_tail_as_the_process_backend_does() -> None:
    # The actor imports nothing of ours (it is shipped to Ray's nodes), so it writes the mark
    # again; the viewers' masking cuts a failed start's error at it (server/access/redaction.py).
    from dgxmm.fleet import LOG_TAIL_MARK
    from dgxmm.fleet.backends import ray_actor

    assert ray_actor.LOG_TAIL_MARK == LOG_TAIL_MARK
