"""``Settling``: the deployments found up at a restart, asked again until they settle."""

from __future__ import annotations

import threading

from support import wait_for

from dgxmm.errors import BackendError
from dgxmm.fleet.settling import Settling, Unsettled


def test_each_is_asked_until_a_correction_or_its_window_ends() -> None:
    asked: dict[int, int] = {1: 0, 2: 0, 3: 0}
    lock = threading.Lock()

    def settle(deployment_id: int) -> bool:
        with lock:
            asked[deployment_id] += 1
            count = asked[deployment_id]
        if deployment_id == 3:
            raise BackendError("the server did not answer")  # asked again all the same
        return deployment_id == 1 and count == 3  # 1 settles at its third ask; 2 never

    settling = Settling(settle, first_s=0.01, most_between_s=0.05)
    settling.watch(
        [Unsettled(deployment_id=i, window_s=w) for i, w in ((1, 600.0), (2, 0.3), (3, 0.3))]
    )
    try:
        thread = settling._thread
        assert thread is not None
        wait_for(lambda: not thread.is_alive(), "the watch to end")
    finally:
        settling.close()
    assert asked[1] == 3  # not asked again once settled, though its window is long
    assert asked[2] >= 2  # asked again and again, then given up at the window's end
    assert asked[3] >= 2


def test_nothing_found_up_starts_no_thread() -> None:
    settling = Settling(lambda _: True)
    settling.watch([])
    assert settling._thread is None
    settling.close()
