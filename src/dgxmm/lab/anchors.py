"""The neighbours' idle policies, replayed: what Ollama, llama-swap and Knative would do.

Each is an idle timeout: after ``idle_us`` with no request the server goes down into one
resting phase, and the next request brings it back up, waiting for it. They are not dgxmm's
decisions (those the lab replays through the decider's own functions); they are the anchors a
platform team would pick instead, with their documented defaults (notes/savings.md):

- **Ollama**: ``keep_alive`` 5 minutes, then the model is unloaded. ``OLLAMA``: a stop after
  5 minutes idle.
- **llama-swap**: a ``ttl`` per model, then the server goes; with vLLM's sleep mode behind it,
  a sleep. ``LLAMA_SWAP_SLEEP``: a level-1 sleep after 5 minutes (a ``ttl`` of 300 s).
- **Knative** (KPA): no traffic in its 60 s stable window scales to zero, after a 30 s grace
  period. ``KNATIVE``: a stop after 90 s idle.

How a replay goes, request by request (a request holds its server for a microsecond):

- a request that finds the server awake is served at once;
- one that finds it resting starts the way back up at once and waits for it; one that finds it
  going down waits for the way down to end, then for the way up (a sleep under way cannot be
  called back: vLLM aborts nothing, it finishes first);
- every request arriving while it comes up waits until it is up, and is then served: the
  idle clock starts again from that moment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgxmm.lab.durations import Duration, ServerTimes
from dgxmm.lab.ledger import Phase, Replayed, Timeline
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = [
    "KNATIVE",
    "LLAMA_SWAP_SLEEP",
    "OLLAMA",
    "IdleTimeout",
    "replay_idle_timeout",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class IdleTimeout:
    """Go down into ``rest`` after ``idle_us`` without a request."""

    name: str
    idle_us: int
    rest: Phase  # Phase.ASLEEP_1, ASLEEP_2 or STOPPED

    def __post_init__(self) -> None:
        if self.idle_us < 0 or not self.rest.is_resting:
            raise ValueError(
                f"an idle timeout waits >= 0 and rests; got {self.idle_us}, {self.rest}"
            )


OLLAMA = IdleTimeout(name="ollama-keep-alive-5m", idle_us=5 * MINUTE_US, rest=Phase.STOPPED)
LLAMA_SWAP_SLEEP = IdleTimeout(
    name="llama-swap-ttl-sleep-5m", idle_us=5 * MINUTE_US, rest=Phase.ASLEEP_1
)
KNATIVE = IdleTimeout(name="knative-scale-to-zero", idle_us=90 * SECOND_US, rest=Phase.STOPPED)


def replay_idle_timeout(
    arrivals_us: Ints,
    policy: IdleTimeout,
    times: ServerTimes,
    *,
    start_us: int,
    end_us: int,
    rng: np.random.Generator,
) -> Replayed:
    """Replay ``policy`` on one deployment's arrivals over ``[start_us, end_us)``.

    The deployment is awake at ``start_us``, as always-on is; each way down into
    ``policy.rest`` and back up takes a time drawn from ``times`` with ``rng``, as dgxmm's
    replays draw theirs.
    """
    down_of, up_of = _steps(times, policy.rest)
    arrivals = np.asarray(arrivals_us, dtype=np.int64)
    waits = np.zeros(len(arrivals), dtype=np.int64)
    phases: list[tuple[int, Phase]] = [(start_us, Phase.AWAKE)]
    idle_from = start_us  # when the server last had work
    up_at: int | None = None  # while coming up: when it is up
    for index, at in enumerate(arrivals.tolist()):
        if up_at is not None and at < up_at:
            waits[index] = up_at - at  # it is coming up already: wait with the others
            continue
        if up_at is not None:
            idle_from, up_at = up_at, None  # up: the held requests were served at up_at
        down_at = idle_from + policy.idle_us
        if at < down_at:
            idle_from = at + 1
            continue
        rested_at = down_at + int(down_of.draw(rng, 1)[0])
        phases.append((down_at, Phase.GOING_DOWN))
        phases.append((rested_at, policy.rest))
        rise = max(at, rested_at)
        up_at = rise + int(up_of.draw(rng, 1)[0])
        phases.append((rise, policy.rest.way_up))
        phases.append((up_at, Phase.AWAKE))
        waits[index] = up_at - at
    if up_at is not None:
        idle_from = up_at
    if idle_from + policy.idle_us < end_us:
        down_at = idle_from + policy.idle_us
        phases.append((down_at, Phase.GOING_DOWN))
        phases.append((min(down_at + int(down_of.draw(rng, 1)[0]), end_us), policy.rest))
    kept = [(at, phase) for at, phase in phases if at < end_us] or [(start_us, Phase.AWAKE)]
    return Replayed(timeline=Timeline.joined(start_us, end_us, kept), waits_us=waits)


def _steps(times: ServerTimes, rest: Phase) -> tuple[Duration, Duration]:
    """Return the way down into ``rest`` and the way back up from it."""
    if rest is Phase.STOPPED:
        return times.stop, times.start
    if rest is Phase.ASLEEP_2:
        return times.sleep_2, times.wake_2
    return times.sleep_1, times.wake_1
