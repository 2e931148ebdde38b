"""The stand-in's fault modes: how a real model server misbehaves, on demand.

Real vLLM servers take minutes to start, hang on ``/sleep``, die during a wake or answer
500; tests and benchmarks drive dgxmm through those faults with real processes. Each fault
is set on the command line and can be switched at run time: ``GET /dgxmm/faults`` shows
them, ``POST /dgxmm/faults`` with a JSON object of some of the fields below changes those.
The start-up delay is the command line's ``--startup-delay``.

``die_mid_answer`` is a model server that dies while it answers: the proxy must not pass
the cut answer on as a whole one.

Two are not faults of vLLM but of a server dgxmm must not trust, for the proxy's tests:
``set_cookies`` sends each of its ``Set-Cookie`` values with every answer (a server trying
to set dgxmm's login cookie), and ``echo_cookies`` tells in ``X-Standin-Cookies`` (a JSON
list) the ``Cookie`` headers the request came with. ``echo_headers`` does the same for any
headers, by name: ``X-Standin-Headers`` is a JSON object of each name (lower case) and the
values received under it, so a test sees what a proxy in front added or left out.

Three are answers no reader should take whole, for the bounds of dgxmm's reads (issue 44):
``error_bytes`` answers every completion with 500 and a body that long; ``long_line_bytes``
answers a streamed one with a line that long and no newline; ``drip_s`` starts a streamed
answer with comment lines, one every so many seconds, for as long as the fault is on (600 at
most), before its events. ``GET /dgxmm/seen`` tells the bytes each long answer had sent when
it ended (the reader took them, or they sat in the sockets' buffers when it hung up), and
the requests a hang fault holds now (``{"wake_hang_s": 1}``: a wake under way).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["Faults"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Faults:
    """The faults switched on; all off by default."""

    # /sleep holds its answer this long (or until switched back to 0), then sleeps
    sleep_hang_s: float = 0.0
    wake_hang_s: float = 0.0  # /wake_up likewise, then wakes
    sleep_error: bool = False  # /sleep answers 500 and stays awake
    die_on_wake: bool = False  # the process exits during /wake_up, without answering
    metrics_silent: bool = False  # /metrics does not answer while this is on
    metrics_delay_s: float = 0.0  # /metrics answers this late
    completion_error: bool = False  # chat completions answer 500 (a woken engine that broke)
    # The process exits part way through a completion's answer: a stream after its first
    # event, a whole answer (sent chunked, as a server that streams its JSON does) after
    # half its body; the client sees a cut answer, as when a server runs out of memory.
    die_mid_answer: bool = False
    set_cookies: tuple[str, ...] = ()  # a Set-Cookie header with each answer, one per value
    echo_cookies: bool = False  # X-Standin-Cookies: the Cookie headers received, as JSON
    echo_headers: tuple[str, ...] = ()  # X-Standin-Headers: these headers received, as JSON
    error_bytes: int = 0  # completions answer 500 with a body of this many bytes
    long_line_bytes: int = 0  # a streamed completion is one line this long, no newline
    drip_s: float = 0.0  # a streamed completion first drips a line every this many seconds

    def changed(self, values: object) -> Faults:
        """Return these faults with ``values`` (a JSON object) applied (ValueError: the field)."""
        if not isinstance(values, dict):
            raise ValueError("faults: give a JSON object of fault names and values")
        kinds = {field.name: field.type for field in dataclasses.fields(self)}
        checked: dict[str, Any] = {}
        for name, value in values.items():
            kind = kinds.get(name)
            if kind is None:
                raise ValueError(f"{name}: not a fault (known: {', '.join(kinds)})")
            if kind == "bool":
                if not isinstance(value, bool):
                    raise ValueError(f"{name}: {value!r} is not true or false")
            elif kind == "tuple[str, ...]":
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"{name}: {value!r} is not a list of texts")
                checked[name] = tuple(value)
                continue
            elif kind == "int":
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"{name}: {value!r} is not a whole number of bytes, 0 or more")
            elif isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name}: {value!r} is not a number of seconds, 0 or more")
            checked[name] = value
        return dataclasses.replace(self, **checked)

    def to_json(self) -> dict[str, Any]:
        """Return the faults as a JSON object."""
        return dataclasses.asdict(self)
