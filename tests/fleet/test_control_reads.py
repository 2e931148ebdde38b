"""Every control call reads at most a few KiB of a model server's answer (issue 44, point 2).

A server that answers a wake's check (or any control call) with a huge body must not make
dgxmm read it whole: the answer is a stream here, made lazily, and the test counts the bytes
dgxmm took from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from dgxmm.errors import BackendError
from dgxmm.fleet import HttpTimeouts
from dgxmm.fleet.backends.answers import MAX_CONTROL_BYTES
from dgxmm.fleet.backends.client import ModelServerClient

HUGE = 256 * 1024 * 1024
PIECE = 64 * 1024


class Endless(httpx.SyncByteStream):
    """A body of ``HUGE`` bytes, made as it is read; ``taken`` counts what the reader took."""

    def __init__(self, first: bytes = b"") -> None:
        self.first = first
        self.taken = 0

    def __iter__(self) -> Iterator[bytes]:
        if self.first:
            self.taken += len(self.first)
            yield self.first
        while self.taken < HUGE:
            self.taken += PIECE
            yield b"x" * PIECE


Call = Callable[[ModelServerClient], object]
CALLS: dict[str, Call] = {
    "wake": lambda client: client.wake(1, timeout_s=30),
    "sleep": lambda client: client.sleep(1, timeout_s=30),
    "is_sleeping": lambda client: client.is_sleeping(),
    "models": lambda client: client.served_models(),
    "post-wake check": lambda client: client.check_completion(timeout_s=30),
}


@pytest.mark.parametrize("status", [200, 500], ids=["ok", "error"])
@pytest.mark.parametrize("call", list(CALLS), ids=list(CALLS))
def test_a_huge_answer_to_a_control_call_is_read_only_to_the_bound(call: str, status: int) -> None:
    bodies: list[Endless] = []

    def answer(request: httpx.Request) -> httpx.Response:
        # /metrics (the wake asks it for the sleep level) has its own bounded path.
        if request.url.path == "/metrics":
            return httpx.Response(404)
        bodies.append(Endless(b'{"is_sleeping": ' if status == 200 else b""))
        return httpx.Response(status, stream=bodies[-1])

    client = ModelServerClient(
        "http://gpu-box:8000",
        server="deployment 'big'",
        timeouts=HttpTimeouts(),
        transport=httpx.MockTransport(answer),
    )
    try:
        with pytest.raises(BackendError) as raised:
            CALLS[call](client)
    finally:
        client.close()
    assert bodies, "the call asked nothing"
    for body in bodies:
        assert body.taken <= MAX_CONTROL_BYTES + PIECE
    said = str(raised.value)
    assert "deployment 'big'" in said
    assert len(said) < 1000  # the excerpt, not the body
