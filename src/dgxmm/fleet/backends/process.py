"""The ``process`` backend: dgxmm launches the model server and owns its process.

The command runs in a session of its own (``start_new_session=True``), so the server and
every worker it forks share one process group that a stop can signal at once. Its output is
appended to ``server.log`` in the backend's run directory, beside ``server.pid``, which
names the process well enough (pid, start time, boot id) to find it again after dgxmm
restarts. Linux only: liveness is read from /proc.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx

from dgxmm.clock import Clock, from_us
from dgxmm.errors import BackendError, Conflict, DefinitionError, ServerGone
from dgxmm.fleet.backends.client import ModelServerClient
from dgxmm.fleet.backends.pages import Pages
from dgxmm.fleet.backends.pidfile import (
    PidRecord,
    boot_id,
    group_members,
    is_alive,
    read_pid_file,
    remove_pid_file,
    start_ticks,
    write_pid_file,
)
from dgxmm.fleet.backends.protocol import (
    DEFAULT_STOP_GRACE_S,
    LOG_TAIL_MARK,
    BackendKind,
    Health,
    HealthCheck,
    HttpTimeouts,
    StopOutcome,
)
from dgxmm.fleet.metrics.sample import MetricsSample

__all__ = ["PORT_PLACEHOLDER", "ProcessBackend", "ProcessSpec"]

T = TypeVar("T")

PORT_PLACEHOLDER = "{port}"
LOG_NAME = "server.log"
PID_NAME = "server.pid"
_LOG_ROTATE_BYTES = 64 * 1024 * 1024
_KILL_WAIT_S = 10.0  # SIGKILL cannot be caught; this only covers the kernel's teardown
_POLL_S = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSpec:
    """The command line of a server, the port it listens on, and its environment."""

    argv: tuple[str, ...]  # "{port}" in an argument is replaced by the port
    port: int
    host: str = "127.0.0.1"
    env: Mapping[str, str] = field(default_factory=dict)  # added to dgxmm's own environment
    cwd: Path | None = None

    def __post_init__(self) -> None:
        if not self.argv or not all(isinstance(arg, str) and arg for arg in self.argv):
            raise DefinitionError("argv", "give the command line as non-empty strings")
        if not 1 <= self.port <= 65535:
            raise DefinitionError("port", f"{self.port} is out of range 1-65535")
        if not self.host:
            raise DefinitionError("host", "give the host the server listens on")

    @property
    def base_url(self) -> str:
        """Return the URL the server answers on."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def command(self) -> tuple[str, ...]:
        """Return the command line with the port put in for ``{port}``."""
        # Not str.format: arguments may hold JSON with braces of their own.
        return tuple(arg.replace(PORT_PLACEHOLDER, str(self.port)) for arg in self.argv)


class ProcessBackend:
    """A model server that dgxmm starts, stops, and finds again after a restart."""

    def __init__(
        self,
        *,
        name: str,
        spec: ProcessSpec,
        run_dir: Path,
        timeouts: HttpTimeouts | None = None,
        stop_grace_s: float = DEFAULT_STOP_GRACE_S,
        clock: Clock,
        transport: httpx.BaseTransport | None = None,
        pages: Pages | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self.run_dir = run_dir
        self.stop_grace_s = stop_grace_s
        self._clock = clock  # the fleet's: the store's clock, or a test's
        self._client = ModelServerClient(
            spec.base_url,
            server=str(self),
            timeouts=timeouts or HttpTimeouts(),
            transport=transport,
            pages=pages,
        )
        self._lock = threading.RLock()
        self._record: PidRecord | None = None
        self._popen: subprocess.Popen[bytes] | None = None

    def __str__(self) -> str:
        return f"deployment {self.name!r} (process, {self.spec.base_url})"

    @property
    def kind(self) -> BackendKind:
        """Return ``BackendKind.PROCESS``."""
        return BackendKind.PROCESS

    @property
    def base_url(self) -> str:
        """Return the URL the server answers on."""
        return self.spec.base_url

    @property
    def owns_process(self) -> bool:
        """Return True: dgxmm started this server."""
        return True

    @property
    def log_path(self) -> Path:
        """Return the file the server's output is appended to."""
        return self.run_dir / LOG_NAME

    @property
    def pid_path(self) -> Path:
        """Return the pid file."""
        return self.run_dir / PID_NAME

    @property
    def pid(self) -> int | None:
        """Return the pid of the running server, or None."""
        # No lock: a stop holds it through its grace period, and a reading needs no more
        # than the pid file and /proc.
        record = self._live_record()
        return record.pid if record else None

    def is_running(self) -> bool:
        """Return whether the process this backend started still runs."""
        return self.pid is not None

    def start(self) -> None:
        """Launch the command in its own process group; do not wait for it to be healthy."""
        with self._lock:
            running = self._live_record()
            if running is not None:
                raise Conflict(f"start of {self}: already running as pid {running.pid}")
            remove_pid_file(self.pid_path)
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._rotate_log()
            command = self.spec.command()
            now_us = self._clock.now_us()
            with self.log_path.open("ab") as log:
                log.write(f"=== dgxmm: starting {list(command)} at {_iso(now_us)} ===\n".encode())
                log.flush()
                try:
                    popen = subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env={**os.environ, **self.spec.env},
                        cwd=self.spec.cwd,
                        start_new_session=True,
                        close_fds=True,
                    )
                except OSError as err:
                    log.write(f"=== dgxmm: cannot start: {err} ===\n".encode())
                    raise BackendError(
                        f"start of {self}: cannot run {command[0]!r}: {err.strerror or err}"
                    ) from err
            self._popen = popen
            ticks = start_ticks(popen.pid)
            if ticks is None:
                popen.wait()
                raise ServerGone(f"start of {self}: {self._gone_detail()}")
            record = PidRecord(
                pid=popen.pid,
                start_ticks=ticks,
                boot_id=boot_id(),
                argv=command,
                port=self.spec.port,
                started_at_us=now_us,
            )
            write_pid_file(self.pid_path, record)
            self._record = record

    def stop(self, grace_s: float | None = None) -> StopOutcome:
        """Send SIGTERM to the process group, then SIGKILL to what outlives the grace period."""
        grace = self.stop_grace_s if grace_s is None else grace_s
        with self._lock:
            record = self._live_record()
            if record is None:
                remove_pid_file(self.pid_path)
                self._record = None
                return StopOutcome.NOT_RUNNING
            self._signal_group(record, signal.SIGTERM)
            outcome = StopOutcome.TERMINATED
            if not self._wait_group_gone(record, grace):
                outcome = StopOutcome.KILLED
                self._signal_group(record, signal.SIGKILL)
                if not self._wait_group_gone(record, _KILL_WAIT_S):
                    raise BackendError(
                        f"stop of {self}: processes {group_members(record.pid)} of group "
                        f"{record.pid} still run {_KILL_WAIT_S:g} s after SIGKILL"
                    )
            remove_pid_file(self.pid_path)
            self._record = None
            how = "SIGTERM" if outcome is StopOutcome.TERMINATED else f"SIGKILL after {grace:g} s"
            self._note(f"stopped with {how}")
            return outcome

    def reattach(self) -> HealthCheck:
        """Find the server from its pid file (after a dgxmm restart) and check its health.

        A pid file whose process has exited, or whose pid now belongs to another process, is
        stale: it is removed and the check reports ``Health.GONE``.
        """
        with self._lock:
            if self._live_record() is None:
                stale = read_pid_file(self.pid_path)
                remove_pid_file(self.pid_path)
                self._record = None
                if stale is None:
                    return HealthCheck(health=Health.GONE, detail="not running (no pid file)")
                return HealthCheck(
                    health=Health.GONE,
                    detail=f"not running: process {stale.pid} of the pid file has exited "
                    "or the pid now belongs to another process",
                )
        return self.check_health()

    def check_health(self) -> HealthCheck:
        """Report GONE when the process has exited; otherwise ask ``GET /health``."""
        if not self.is_running():
            return HealthCheck(health=Health.GONE, detail=self._gone_detail())
        check = self._client.check_health()
        # The process may have died while we asked; say so rather than "unreachable".
        if not check.is_healthy and not self.is_running():
            return HealthCheck(health=Health.GONE, detail=self._gone_detail())
        return check

    def sleep(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Put the server to sleep once its requests in flight finish; confirm it sleeps."""
        self._act("sleep", lambda: self._client.sleep(level, timeout_s=timeout_s))

    def wake(self, level: int = 1, *, timeout_s: float | None = None) -> None:
        """Wake the server from a sleep of ``level``; confirm it no longer sleeps."""
        self._act("wake", lambda: self._client.wake(level, timeout_s=timeout_s))

    def is_sleeping(self) -> bool:
        """Ask the server whether it sleeps."""
        return self._act("sleep check", self._client.is_sleeping)

    def check_completion(self, *, timeout_s: float | None = None) -> None:
        """Ask for one tiny completion; raise ``BackendError`` unless it answers in time."""
        self._act("post-wake check", lambda: self._client.check_completion(timeout_s=timeout_s))

    def served_models(self) -> list[str]:
        """Return the model names the server lists at ``/v1/models``."""
        return self._act("model list", self._client.served_models)

    def fetch_metrics(self) -> str:
        """Return the server's ``/metrics`` page."""
        return self._act("metrics", self._client.fetch_metrics)

    def sample(self) -> MetricsSample:
        """Fetch ``/metrics`` and read it as a sample."""
        return self._act("metrics", lambda: self._client.sample(self._clock))

    def close(self) -> None:
        """Release the HTTP connections; the process keeps running."""
        self._client.close()

    def _act(self, what: str, call: Callable[[], T]) -> T:
        """Run one HTTP action; a process that is not running makes it ``ServerGone``."""
        if not self.is_running():
            raise ServerGone(f"{what} on {self}: {self._gone_detail()}")
        try:
            return call()
        except ServerGone:
            raise
        except BackendError as err:
            if self.is_running():
                raise
            raise ServerGone(f"{what} on {self}: {self._gone_detail()}") from err

    def _live_record(self) -> PidRecord | None:
        """Return the record of our running process (from memory or the pid file), or None."""
        self._reap()
        record = self._record or read_pid_file(self.pid_path)
        if record is not None and is_alive(record):
            self._record = record
            return record
        self._reap(wait=True)  # it may have turned zombie since the first reap
        return None

    def _reap(self, wait: bool = False) -> None:
        """Collect our exited child's exit code, so that it does not linger as a zombie."""
        popen = self._popen
        if popen is None or popen.returncode is not None:
            return
        if not wait or start_ticks(popen.pid) is not None:
            popen.poll()
            return
        # /proc says it is a zombie or gone: waitpid returns at once.
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=_KILL_WAIT_S)

    def _signal_group(self, record: PidRecord, sig: signal.Signals) -> None:
        try:
            os.killpg(record.pid, sig)
        except ProcessLookupError:
            pass  # already gone
        except PermissionError as err:
            raise BackendError(
                f"stop of {self}: not allowed to signal process group {record.pid}: {err}"
            ) from err

    def _wait_group_gone(self, record: PidRecord, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            self._reap()
            if not is_alive(record) and not group_members(record.pid):
                self._reap(wait=True)
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)

    def _gone_detail(self) -> str:
        popen = self._popen
        if popen is not None and popen.returncode is not None:
            return f"the process {_exit_status(popen.returncode)}{self._log_tail()}"
        record = self._record or read_pid_file(self.pid_path)
        if record is not None:
            return f"process {record.pid} is no longer running{self._log_tail()}"
        return "not running (never started here, and no pid file)"

    def _log_tail(self, lines: int = 5) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
                tail = log.read().decode(errors="replace").splitlines()
        except OSError:
            return ""
        kept = [line for line in tail if line.strip()][-lines:]
        return f"{LOG_TAIL_MARK}{self.log_path}: " + " | ".join(kept) if kept else ""

    def _rotate_log(self) -> None:
        try:
            if self.log_path.stat().st_size > _LOG_ROTATE_BYTES:
                os.replace(self.log_path, self.log_path.with_name(LOG_NAME + ".1"))
        except FileNotFoundError:
            pass

    def _note(self, message: str) -> None:
        with self.log_path.open("ab") as log:
            log.write(f"=== dgxmm: {message} at {_iso(self._clock.now_us())} ===\n".encode())


def _exit_status(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _iso(at_us: int) -> str:
    return from_us(at_us).isoformat(timespec="seconds")
