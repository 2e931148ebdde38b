"""The fidelity rig: `dgxmm serve` on its fast clock, with real stand-ins, and what it recorded.

``Rig`` starts ``dgxmm serve`` as a process with ``DGXMM_FAST_CLOCK`` at ``RATE`` times real
time and the proxy on a port of its own, defines a small fleet over its HTTP API (process
deployments that run dgxmm's stand-in, their schedules), and plays a trace at the proxy: each
request is sent on a thread of its own at the real instant the fast clock reads its simulated
one. Only dgxmm's clock is fast: the stand-ins' sleeps and wakes take real seconds, so each
lasts ``RATE`` times as long on the simulated clock.

``observe`` reads back what the product recorded, in the lab's words: a ``Timeline`` from the
deployment events (a sleep from its pass's planned minute, the schedule's ``last_run_at``, to
its event; a wake from its event less the time the event says it took, to the event), and the
measured steps the rig's jitter is taken from (``jitter_us``).

Import as ``from lab.fidelitykit import ...`` (tests/ is on pytest's pythonpath).
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from fleet.fleetkit import ensure_gone
from proxy.proxykit import chat_body
from support import PATIENCE_S, standin_keys, start_serve, wait_for

from dgxmm.clock import from_us, to_us
from dgxmm.decider.schedules import ScheduleAction
from dgxmm.fleet.backends.pidfile import read_pid_file
from dgxmm.fleet.metrics.prometheus import parse_exposition
from dgxmm.lab import Phase, Timeline
from dgxmm.time_units import SECOND_US

__all__ = [
    "RATE",
    "Member",
    "Observed",
    "Rig",
    "Sent",
    "Step",
    "awake_edges",
    "jitter_us",
    "observe",
]

RATE = 60  # simulated seconds per real second: two simulated hours in two real minutes
_TOOK = re.compile(r"after (\d+(?:\.\d+)?) s")  # the deployer's "awake and healthy after 1.23 s"


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """One deployment of the small fleet, as both sides are given it."""

    name: str
    gpu: int
    awake_gib: float
    asleep_gib: float
    sleep_level: int
    sleep_s: float  # the stand-in's --hang-sleep: how long its /sleep takes, real seconds
    wake_s: float  # --hang-wake: each /wake_up (a level-2 wake asks two)
    schedules: tuple[tuple[ScheduleAction, int], ...]  # (action, seconds after the start)
    requests: tuple[int, ...]  # seconds after the start

    @property
    def model(self) -> str:
        """Return the model it serves (``standin_keys`` names it so)."""
        return f"{self.name}-model"


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """One request of the trace as the rig sent it through the proxy."""

    at_us: int  # its simulated instant in the trace
    model: str
    status: int
    latency_s: float  # real seconds, from sending to the whole answer


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """A sleep or wake the product did, on the simulated clock."""

    began_us: int
    ended_us: int
    schedule: int | None  # the schedule that asked for it; None: a request did

    @property
    def lasted_us(self) -> int:
        """Return how long it took."""
        return self.ended_us - self.began_us


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """One deployment as the product recorded it over the span."""

    timeline: Timeline
    sleeps: tuple[Step, ...]
    wakes: tuple[Step, ...]
    # How late the runner acted: on each slot it did not defer (its pass's planned minute
    # after the slot), and at each scheduled wake (its begin after that minute).
    late_us: tuple[int, ...]
    deferred: Mapping[int, int]  # schedule id -> deferrals recorded
    done_at: Mapping[int, int]  # schedule id -> the planned minute of the pass that ran it
    reasons: Mapping[int, str]  # schedule id -> its last deferral's reason


class Rig:
    """`dgxmm serve` on the fast clock, with its proxy and an admin's client; ``close`` after."""

    def __init__(self, tmp_path: Path, gpus: int) -> None:
        self.data = tmp_path / "data"
        self.data.mkdir()
        config = {"gpus": [{"index": i, "name": "H100", "memory_gib": 80} for i in range(gpus)]}
        (self.data / "config.json").write_text(json.dumps(config))
        self.anchor_us = time.time_ns() // 1000 // SECOND_US * SECOND_US
        clock = f"{RATE}@{from_us(self.anchor_us).isoformat()}"
        self.process, (port, proxy_port) = start_serve(
            lambda ports: ["serve", "--data", str(self.data), "--port", str(ports[0]),
                           "--proxy-port", str(ports[1]), "--time-zone", "UTC", "--tick", "0.2"],
            ports=2,
            env={"DGXMM_FAST_CLOCK": clock},
        )  # fmt: skip
        # Read what the server prints from here on, so that a full pipe never blocks it.
        self.output: list[str] = []
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()
        token = (self.data / "admin-token").read_text().strip()
        self.api = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=PATIENCE_S,
            trust_env=False,
        )
        self.proxy_url = f"http://127.0.0.1:{proxy_port}"
        self.ids: dict[str, int] = {}

    def _read_output(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    # -- the clocks ---------------------------------------------------------------------------

    def now_us(self) -> int:
        """Return the instant the server's fast clock reads now."""
        return self.anchor_us + round((time.time_ns() // 1000 - self.anchor_us) * RATE)

    def real_at(self, at_us: int) -> float:
        """Return the real instant (Unix seconds) at which the fast clock reads ``at_us``."""
        return (self.anchor_us + (at_us - self.anchor_us) / RATE) / SECOND_US

    def sleep_until(self, at_us: int) -> None:
        """Wait until the fast clock reads ``at_us``."""
        time.sleep(max(0.0, self.real_at(at_us) - time.time()))

    # -- the fleet ----------------------------------------------------------------------------

    def deploy(self, member: Member) -> int:
        """Define a member as a process deployment running the stand-in, and start it."""
        keys = standin_keys(
            member.name, "--latency", "20", "--hang-sleep", str(member.sleep_s),
            "--hang-wake", str(member.wake_s), gpus=(member.gpu,), awake=member.awake_gib,
            asleep=member.asleep_gib, time_zone="UTC", sleep_level=member.sleep_level,
        )  # fmt: skip
        created = self._ok(self.api.post("/api/deployments", json=keys), 201)
        deployment_id = int(created["id"])
        self._ok(self.api.post(f"/api/deployments/{deployment_id}/start"))
        self.ids[member.name] = deployment_id
        return deployment_id

    def schedule(self, deployment_id: int, action: ScheduleAction, at_us: int) -> int:
        """Define a schedule every day at ``at_us``'s UTC minute; return its id."""
        body = {"action": action.value, "days": 127, "time_zone": "UTC",
                "time": from_us(at_us).strftime("%H:%M")}  # fmt: skip
        answer = self.api.post(f"/api/deployments/{deployment_id}/schedules", json=body)
        made = self._ok(answer, 201)
        return int(made["id"])

    def replay(self, requests: Sequence[tuple[int, str]]) -> list[Sent]:
        """Send each ``(at_us, model)`` through the proxy at its instant; return the answers."""
        sent: list[Sent] = []
        lock = threading.Lock()
        threads: list[threading.Thread] = []
        with httpx.Client(
            timeout=PATIENCE_S, trust_env=False, limits=httpx.Limits(max_connections=64)
        ) as client:

            def send(at_us: int, model: str) -> None:
                began = time.monotonic()
                answer = client.post(f"{self.proxy_url}/v1/chat/completions", json=chat_body(model))
                one = Sent(at_us=at_us, model=model, status=answer.status_code,
                           latency_s=time.monotonic() - began)  # fmt: skip
                with lock:
                    sent.append(one)

            for at_us, model in sorted(requests):
                self.sleep_until(at_us)
                thread = threading.Thread(target=send, args=(at_us, model), daemon=True)
                thread.start()
                threads.append(thread)
            for thread in threads:
                thread.join(timeout=PATIENCE_S)
        return sorted(sent, key=lambda s: (s.at_us, s.model))

    def settled(self) -> None:
        """Wait until no deployment is in the middle of an action and no request is held."""

        def quiet() -> bool:
            states = {d["state"] for d in self.get("/api/deployments")["deployments"]}
            return states <= {"running", "sleeping"} and not any(self.held_now().values())

        wait_for(quiet, "the fleet to settle")

    # -- what the product recorded ------------------------------------------------------------

    def get(self, path: str, **params: Any) -> Any:
        """GET an API path as the admin; fail on anything but 200."""
        return self._ok(self.api.get(path, params=params))

    def events(self, deployment_id: int) -> list[dict[str, Any]]:
        """Return a deployment's events, oldest first."""
        found = self.get(f"/api/deployments/{deployment_id}/events", limit=1000)["events"]
        return sorted(found, key=lambda e: int(e["id"]))

    def schedules(self, deployment_id: int) -> list[dict[str, Any]]:
        """Return a deployment's schedules as the API shows them."""
        return list(self.get(f"/api/deployments/{deployment_id}/schedules")["schedules"])

    def held_total(self) -> dict[str, int]:
        """Return, per deployment name, the requests the proxy ever held for a wake."""
        return self._proxy_series("dgxmm_proxy_held_requests_total")

    def held_now(self) -> dict[str, int]:
        """Return, per deployment name, the requests the proxy holds now."""
        return self._proxy_series("dgxmm_proxy_held_requests")

    def _proxy_series(self, name: str) -> dict[str, int]:
        response = self.api.get("/metrics")
        assert response.status_code == 200, response.text
        return {
            str(series.label("deployment")): int(series.value)
            for series in parse_exposition(response.text).series
            if series.name == name
        }

    def close(self) -> None:
        """Stop the server, then every stand-in it started (``dgxmm serve`` leaves them)."""
        pids = [
            record.pid
            for deployment_id in self.ids.values()
            if (record := read_pid_file(self.data / "deployments" / str(deployment_id)
                                        / "server.pid")) is not None
        ]  # fmt: skip
        self.api.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=60)
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        for pid in pids:
            ensure_gone(pid)

    @staticmethod
    def _ok(response: httpx.Response, status: int = 200) -> Any:
        assert response.status_code == status, f"{response.request.url}: {response.text}"
        return response.json()


def observe(
    events: Sequence[Mapping[str, Any]],
    schedules: Sequence[Mapping[str, Any]],
    *,
    start_us: int,
    end_us: int,
    sleep_level: int,
) -> Observed:
    """Read one deployment's events and schedules over ``[start_us, end_us)``, lab's words.

    Only sleeps and wakes may happen in the span (the fleet never starts or stops there);
    anything else fails, naming the event.
    """
    by_id = {int(s["id"]): s for s in schedules}
    asleep = Phase.ASLEEP_2 if sleep_level == 2 else Phase.ASLEEP_1
    phases: list[tuple[int, Phase]] = [(start_us, Phase.AWAKE)]
    sleeps: list[Step] = []
    wakes: list[Step] = []
    late: list[int] = []
    deferred: dict[int, int] = {}
    reasons: dict[int, str] = {}
    for event in events:
        at = int(event["at_us"])
        if not start_us <= at < end_us:
            continue
        actor = event["actor"] or ""
        schedule = int(actor.split(":", 1)[1]) if actor.startswith("schedule:") else None
        outcome, action = event["outcome"], event["action"]
        if outcome == "deferred" and schedule is not None:
            deferred[schedule] = deferred.get(schedule, 0) + 1
            reasons[schedule] = str(event["detail"])
            continue
        if outcome != "done":
            continue  # a slot skipped: nothing changed
        assert action in ("sleep", "wake"), f"an event the fleet should not have: {event}"
        if action == "sleep":
            assert schedule is not None, f"a sleep no schedule asked for: {event}"
            began = int(by_id[schedule]["last_run_at"])
            sleeps.append(Step(began_us=began, ended_us=at, schedule=schedule))
            phases += [(began, Phase.GOING_DOWN), (at, asleep)]
        else:
            took = _TOOK.search(str(event["detail"]))
            assert took is not None, f"a wake that does not say how long it took: {event}"
            # Never before the phase it follows: the event rounds its time to 10 ms.
            began = max(at - round(float(took.group(1)) * RATE * SECOND_US), phases[-1][0])
            wakes.append(Step(began_us=began, ended_us=at, schedule=schedule))
            phases += [(began, Phase.WAKING), (at, Phase.AWAKE)]
            if schedule is not None:
                late.append(began - int(by_id[schedule]["last_run_at"]))
    done_at: dict[int, int] = {}
    for schedule_id, row in by_id.items():
        ran = row["last_run_at"]
        if ran is None or not start_us <= int(ran) < end_us:
            continue
        done_at[schedule_id] = int(ran)
        if schedule_id not in deferred:  # the pass that ran it was the slot's own minute
            late.append(int(ran) - _slot_us(row))
    return Observed(
        timeline=Timeline.joined(start_us, end_us, phases),
        sleeps=tuple(sleeps),
        wakes=tuple(wakes),
        late_us=tuple(late),
        deferred=deferred,
        done_at=done_at,
        reasons=reasons,
    )


def jitter_us(observed: Sequence[Observed]) -> int:
    """Return the rig's jitter: how far any of its steps landed from the lab's figures.

    The lab is given each deployment's median sleep and median wake; the jitter is the
    largest distance of any one sleep or wake from its median, or the latest the runner
    acted after its minute (``Observed.late_us``).
    """
    spread = [0]
    for one in observed:
        for steps in (one.sleeps, one.wakes):
            if steps:
                middle = median_us(steps)
                spread += [abs(step.lasted_us - middle) for step in steps]
        spread += [abs(late) for late in one.late_us]
    return max(spread)


def median_us(steps: Sequence[Step]) -> int:
    """Return the median of the steps' durations."""
    return round(statistics.median(step.lasted_us for step in steps))


def awake_edges(timeline: Timeline) -> list[int]:
    """Return the instants the timeline goes from awake to not awake or back."""
    phases = timeline.phases()
    return [
        at
        for (_, before), (at, after) in itertools.pairwise(phases)
        if (before is Phase.AWAKE) != (after is Phase.AWAKE)
    ]


def _slot_us(schedule: Mapping[str, Any]) -> int:
    """Return the instant of a schedule's slot on its last run's day (UTC)."""
    day = date.fromisoformat(str(schedule["last_run_day"]))
    hour, minute = (int(part) for part in str(schedule["time"]).split(":"))
    return to_us(
        datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(hours=hour, minutes=minute)
    )
