"""The stand-in's engine: its phase, the requests in flight, and vLLM's metrics page.

Thread-safe: the HTTP server calls it from one thread per connection. A chat completion
holds its thread for the configured latency; a sleep waits for (or aborts) the requests
in flight; the metrics page is rendered under the same lock, so it is consistent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from http import HTTPStatus

from dgxmm.standin.exposition import format_series
from dgxmm.standin.faults import Faults

__all__ = [
    "FINISH_REASONS",
    "LATENCY_BUCKETS",
    "SLEEP_MODES",
    "WAKE_TAGS",
    "Engine",
    "Phase",
    "Refused",
    "StandinConfig",
]

# vLLM's buckets for vllm:e2e_request_latency_seconds.
LATENCY_BUCKETS = (
    *(0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0),
    *(120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0),
)
FINISH_REASONS = ("stop", "length", "abort", "error")
SLEEP_MODES = ("abort", "wait")  # vLLM's third, "keep", freezes requests; not imitated
# What a wake may bring back on its own (vLLM's CuMemAllocator tags); no tag wakes both.
WAKE_TAGS = ("weights", "kv_cache")
_E2E = "vllm:e2e_request_latency_seconds"
_SLEEP_DOC = (
    "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
    "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2."
)
_SUCCESS = ("vllm:request_success_total", "counter", "Count of successfully processed requests.")
_LATENCY = (_E2E, "histogram", "Histogram of e2e request latency in seconds.")
# Sample name -> (family, type, help), as vLLM's prometheus_client writes them.
_FAMILIES = {
    "vllm:num_requests_running": (
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
    ),
    "vllm:num_requests_waiting": (
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
    ),
    "vllm:engine_sleep_state": ("vllm:engine_sleep_state", "gauge", _SLEEP_DOC),
    "vllm:request_success_total": _SUCCESS,
    "vllm:request_success_created": _SUCCESS,
    **{f"{_E2E}_{part}": _LATENCY for part in ("bucket", "count", "sum", "created")},
    "dgxmm_standin_gpu_memory_gib": (
        "dgxmm_standin_gpu_memory_gib",
        "gauge",
        "GPU memory the stand-in pretends to hold (not a vLLM metric).",
    ),
}


class Phase(Enum):
    """Where the stand-in's engine is."""

    STARTING = "starting"  # "loading the model": everything answers 503
    AWAKE = "awake"
    DRAINING = "draining"  # a sleep waits for the requests in flight; new ones get 503
    ASLEEP = "asleep"


class Refused(Exception):
    """A request the engine will not serve now, with the status to answer."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True, kw_only=True)
class StandinConfig:
    """What the command line asked for."""

    model: str
    host: str = "127.0.0.1"
    port: int = 8000
    startup_delay_s: float = 0.0
    latency_ms: float = 100.0
    memory_gib: float = 16.0
    max_num_seqs: int = 256  # vLLM's flag: requests beyond it wait
    faults: Faults = field(default_factory=Faults)  # switched by POST /dgxmm/faults


class Engine:
    """The stand-in's state: its phase, the requests in flight and its counters."""

    def __init__(self, config: StandinConfig, monotonic: Callable[[], float] = time.monotonic):
        self.config = config
        self.created = int(time.time())
        self._monotonic = monotonic
        self._cond = threading.Condition()
        self._transition = threading.Lock()  # one sleep or wake at a time
        self._ready_at = monotonic() + config.startup_delay_s
        self._phase = Phase.STARTING
        self._level = 0
        self._asleep_parts: set[str] = set()  # of WAKE_TAGS, while asleep
        # A level-2 sleep dropped the weights: woken, their memory holds nothing until
        # collective_rpc reload_weights loads them again (vLLM would answer garbage).
        self._weights_dropped = False
        self.prefix_cache_resets = 0
        self._running = 0
        self._waiting = 0
        self._abort_epoch = 0  # a sleep with mode=abort moves it on; older requests end
        self._finished = dict.fromkeys(FINISH_REASONS, 0)
        self._buckets = [0] * len(LATENCY_BUCKETS)
        self._latency_sum = 0.0
        self._latency_count = 0
        self._faults = config.faults
        self._sent: list[int] = []  # the bytes each long answer had sent when it ended
        self._hanging: dict[str, int] = {}  # the requests a hang fault holds now, by fault

    def faults(self) -> Faults:
        """Return the faults switched on now."""
        with self._cond:
            return self._faults

    def set_faults(self, faults: Faults) -> None:
        """Switch faults on or off."""
        with self._cond:
            self._faults = faults

    def sent(self) -> list[int]:
        """Return the bytes each long answer (a fault's) had sent when it ended."""
        with self._cond:
            return list(self._sent)

    def note_sent(self, count: int) -> None:
        """Note the bytes a long answer had sent when it ended."""
        with self._cond:
            self._sent.append(count)

    def hanging(self) -> dict[str, int]:
        """Return the requests a hang fault holds now, by the fault's name."""
        with self._cond:
            return {fault: count for fault, count in self._hanging.items() if count}

    @contextmanager
    def hanging_on(self, fault: str) -> Iterator[None]:
        """Count a request as held by ``fault`` for the block."""
        with self._cond:
            self._hanging[fault] = self._hanging.get(fault, 0) + 1
        try:
            yield
        finally:
            with self._cond:
                self._hanging[fault] -= 1

    def phase(self) -> Phase:
        """Return the phase now (the start-up delay ends by itself)."""
        with self._cond:
            return self._current_phase()

    def generate(self) -> None:
        """Hold one request as long as the configured latency; raise Refused when asleep."""
        for _ in self.steps(1):
            pass

    def steps(self, count: int) -> Iterator[int]:
        """Hold one request for the latency in ``count`` equal steps, yielding after each.

        A stream writes a chunk per step, outside the engine's lock: a slow reader holds
        only its own thread. Closing the iterator early (a client gone) ends the request as
        ``abort``. Raises ``Refused`` when asleep, or when a sleep aborts it.
        """
        began = self._monotonic()
        with self._cond:
            self._refuse_unless_awake()
            epoch = self._abort_epoch
            self._waiting += 1
            try:
                while self._running >= self.config.max_num_seqs and epoch == self._abort_epoch:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            if epoch != self._abort_epoch:
                self._record("abort", self._monotonic() - began)
                self._cond.notify_all()
                raise _aborted()
            self._running += 1
        step_s = self.config.latency_ms / 1000 / max(1, count)
        reason = "abort"
        try:
            for step in range(count):
                with self._cond:
                    deadline = self._monotonic() + step_s
                    while epoch == self._abort_epoch and (left := deadline - self._monotonic()) > 0:
                        self._cond.wait(left)
                    if epoch != self._abort_epoch:
                        raise _aborted()
                yield step
            reason = "stop"
        finally:
            with self._cond:
                self._running -= 1
                self._record(reason, self._monotonic() - began)
                self._cond.notify_all()

    def sleep(self, level: int, mode: str) -> None:
        """Sleep: abort the requests in flight, or wait for them (``mode=wait``)."""
        with self._transition, self._cond:
            phase = self._current_phase()
            if phase is Phase.STARTING:
                raise Refused(HTTPStatus.SERVICE_UNAVAILABLE, "the model is still loading")
            if phase is Phase.ASLEEP:
                return
            self._phase = Phase.DRAINING
            if mode == "abort":
                self._abort_epoch += 1
                self._cond.notify_all()
            while self._running or self._waiting:
                self._cond.wait()
            self._phase = Phase.ASLEEP
            self._level = level
            self._asleep_parts = set(WAKE_TAGS)
            self._weights_dropped = level == 2

    def wake(self, tags: tuple[str, ...] = ()) -> None:
        """Wake the parts ``tags`` name, or all (after a sleep under way has finished)."""
        for tag in tags:
            if tag not in WAKE_TAGS:
                raise Refused(HTTPStatus.BAD_REQUEST, f"tags: {tag!r} is not one of {WAKE_TAGS}")
        with self._transition, self._cond:
            if self._current_phase() is Phase.STARTING:
                raise Refused(HTTPStatus.SERVICE_UNAVAILABLE, "the model is still loading")
            self._asleep_parts -= set(tags or WAKE_TAGS)
            if not self._asleep_parts:  # asleep until every part is awake, as vLLM
                self._phase = Phase.AWAKE
                self._level = 0

    def reload_weights(self) -> None:
        """Load the weights again (``collective_rpc`` ``reload_weights``) into woken memory."""
        with self._cond:
            if "weights" in self._asleep_parts:
                raise Refused(
                    HTTPStatus.INTERNAL_SERVER_ERROR,
                    "reload_weights: the weights' memory sleeps; POST /wake_up?tags=weights first",
                )
            self._weights_dropped = False

    def reset_prefix_cache(self) -> None:
        """Forget the prefix cache (counted, so that a test can see it was asked)."""
        with self._cond:
            self.prefix_cache_resets += 1

    def is_sleeping(self) -> bool:
        """Return whether the engine sleeps (a sleep still draining does not count yet)."""
        return self.phase() is Phase.ASLEEP

    def render_metrics(self) -> str:
        """Return the Prometheus page, named, typed and labelled as vLLM's."""
        with self._cond:
            asleep = self._current_phase() is Phase.ASLEEP
            running, waiting, level = self._running, self._waiting, self._level
            finished = dict(self._finished)
            buckets, total, count = list(self._buckets), self._latency_sum, self._latency_count
        base = (("model_name", self.config.model), ("engine", "0"))
        lines: list[str] = []
        announced: set[str] = set()

        def add(name: str, labels: tuple[tuple[str, str], ...], value: float) -> None:
            family, kind, doc = _FAMILIES[name]
            if family not in announced:  # HELP and TYPE once, before the family's first line
                announced.add(family)
                lines.extend((f"# HELP {family} {doc}", f"# TYPE {family} {kind}"))
            lines.append(format_series(name, labels, value))

        add("vllm:num_requests_running", base, running)
        add("vllm:num_requests_waiting", base, waiting)
        states = {
            "awake": not asleep,
            "weights_offloaded": asleep and level == 1,
            "discard_all": asleep and level == 2,
        }
        for state, on in states.items():
            add("vllm:engine_sleep_state", (*base, ("sleep_state", state)), float(on))
        for reason in FINISH_REASONS:
            labels = (*base, ("finished_reason", reason))
            add("vllm:request_success_total", labels, finished[reason])
            add("vllm:request_success_created", labels, self.created)
        cumulative = 0
        for bound, hits in zip(LATENCY_BUCKETS, buckets, strict=True):
            cumulative += hits
            add(f"{_E2E}_bucket", (*base, ("le", repr(bound))), cumulative)
        add(f"{_E2E}_bucket", (*base, ("le", "+Inf")), count)
        add(f"{_E2E}_count", base, count)
        add(f"{_E2E}_sum", base, total)
        add(f"{_E2E}_created", base, self.created)
        # Not vLLM's: the GPU memory the stand-in pretends to hold (none while asleep).
        add("dgxmm_standin_gpu_memory_gib", base[:1], 0.0 if asleep else self.config.memory_gib)
        return "\n".join(lines) + "\n"

    def _current_phase(self) -> Phase:
        if self._phase is Phase.STARTING and self._monotonic() >= self._ready_at:
            self._phase = Phase.AWAKE
        return self._phase

    def _refuse_unless_awake(self) -> None:
        phase = self._current_phase()
        if phase is Phase.AWAKE and self._weights_dropped:
            raise Refused(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                "the weights were dropped by a level-2 sleep and not reloaded: POST "
                '/collective_rpc {"method": "reload_weights"}',
            )
        if phase is Phase.AWAKE:
            return
        why = {
            Phase.STARTING: "the model is still loading",
            Phase.DRAINING: "the model is going to sleep",
            Phase.ASLEEP: "the model is sleeping; POST /wake_up to wake it",
        }[phase]
        raise Refused(HTTPStatus.SERVICE_UNAVAILABLE, why)

    def _record(self, reason: str, seconds: float) -> None:  # under the lock
        self._finished[reason] += 1
        self._latency_sum += seconds
        self._latency_count += 1
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                self._buckets[i] += 1
                break


def _aborted() -> Refused:
    return Refused(HTTPStatus.SERVICE_UNAVAILABLE, "request aborted: the model was put to sleep")
