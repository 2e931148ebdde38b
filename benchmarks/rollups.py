"""One ``metrics_rollup`` pass over 1,000 deployments, 10 % of them hanging, against the serial way.

One local asyncio server (a child process of its own) listens on as many loopback ports as
there are deployments (each an
``external`` deployment of a real SQLite store and ``Fleet``); on most ports it answers
``/metrics`` with the stand-in's page at once, on every tenth it reads the request and never
answers. The scrapes go through the real backends (httpx, the fleet's timeouts: connect 1 s,
metrics 2 s) and the real rollup writes, once with the pages read in the pass's own threads
(a ``Fleet``'s default) and once by a page process (``dgxmm serve``'s), each with the CPU
this process spent in it: what a pass takes from the requests the server answers beside it.
Issue 12's target: one pass under 5 s. The pass waits for a hung target at most its
per-target timeout (connect plus metrics, 3 s here), so about 3 s of it is that wait; the
rest is reading the 900 pages and two commits.

The serial way (the pass as it was: one deployment after another) is timed over the first
``--serial`` deployments (the same share hanging) and scaled to all of them, since run whole
it would wait 2 s for each hung server one after another.

    .venv/bin/python benchmarks/rollups.py [--deployments 1000] [--hanging 0.1] [--serial 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from sqlalchemy import insert  # noqa: E402

from dgxmm.clock import ManualClock  # noqa: E402
from dgxmm.errors import BackendError  # noqa: E402
from dgxmm.fleet import (  # noqa: E402
    Fleet,
    Gpu,
    GpuInventory,
    HttpTimeouts,
    InventorySource,
    PageProcess,
)
from dgxmm.fleet.deployments.tables import deployments  # noqa: E402
from dgxmm.standin.engine import Engine, StandinConfig  # noqa: E402
from dgxmm.store import Store, writing  # noqa: E402

TIMEOUTS = HttpTimeouts(connect_s=1.0, probe_s=2.0, metrics_s=2.0)


def serve_many_ports(count: int, hanging_every: int, ports_out: Connection) -> None:
    """In a child process (the servers must not share the scraper's interpreter): serve."""
    ports = ManyPorts(count, hanging_every)
    ports_out.send((ports.ports, sorted(ports.hanging)))
    threading.Event().wait()  # until the parent terminates it


class ManyPorts:
    """One asyncio loop on its own thread, listening on ``count`` loopback ports."""

    def __init__(self, count: int, hanging_every: int) -> None:
        page = Engine(StandinConfig(model="m")).render_metrics().encode()
        self._answer = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            + f"Content-Length: {len(page)}\r\n\r\n".encode()
            + page
        )
        self._count = count
        self._hanging_every = hanging_every
        self._loop = asyncio.new_event_loop()
        self.ports: list[int] = []
        self.hanging: set[int] = set()
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait()

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._listen())
        ready.set()
        self._loop.run_forever()

    async def _listen(self) -> None:
        for i in range(self._count):
            hangs = self._hanging_every > 0 and i % self._hanging_every == self._hanging_every - 1
            server = await asyncio.start_server(
                self._hang if hangs else self._reply, "127.0.0.1", 0, backlog=64
            )
            port = server.sockets[0].getsockname()[1]
            self.ports.append(port)
            if hangs:
                self.hanging.add(port)

    async def _reply(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.readuntil(b"\r\n\r\n"):  # keep-alive: one answer per request
                writer.write(self._answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _hang(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await reader.read()  # read and never answer, until the client gives up
        writer.close()


def serial_pass(fleet: Fleet, ids: list[int]) -> None:
    """The pass as it was: sample each deployment in turn."""
    for deployment in [fleet.deployments.get(i) for i in ids]:
        with contextlib.suppress(BackendError):  # one commit per deployment, as it was
            fleet.metrics.record(deployment, fleet.backends.of(deployment).sample())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deployments", type=int, default=1_000)
    parser.add_argument("--hanging", type=float, default=0.1, help="share that never answers")
    parser.add_argument("--serial", type=int, default=100, help="deployments timed serially")
    options = parser.parse_args()
    every = round(1 / options.hanging) if options.hanging > 0 else 0
    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(
        target=serve_many_ports, args=(options.deployments, every, send), daemon=True
    )
    server.start()
    port_list, hanging = receive.recv()
    now = 1_780_480_800_000_000  # 2026-06-03T10:00:00Z
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )
    with tempfile.TemporaryDirectory(prefix="dgxmm-rollups-") as temporary:
        clock = ManualClock(now)
        store = Store.open(Path(temporary) / "dgxmm.db", clock=clock)
        fleet = Fleet(store, inventory=inventory, clock=clock, http_timeouts=TIMEOUTS)
        with writing(store.engine) as connection:  # after the fleet: nothing to reattach
            connection.execute(
                insert(deployments),
                [
                    {"id": i + 1, "name": f"d{i + 1}", "model": "m", "backend": "external",
                     "base_url": f"http://127.0.0.1:{port}", "gpus": "[0]",
                     "memory_gib_awake": 0.01, "memory_gib_asleep": 0.0, "priority": 50,
                     "time_zone": "UTC", "startup_timeout_s": 60.0, "state": "running",
                     "state_since": 0, "created_at": 0, "updated_at": 0}
                    for i, port in enumerate(port_list)
                ],
            )  # fmt: skip
        passes = {"inline": measure_pass(fleet, clock)}
        clock.advance(60_000_000)
        sample = list(range(1, min(options.serial, options.deployments) + 1))
        started = time.perf_counter()
        serial_pass(fleet, sample)
        serial_s = (time.perf_counter() - started) * options.deployments / len(sample)
        fleet.close()
        pages = PageProcess()
        pages.start()
        fleet = Fleet(store, inventory=inventory, clock=clock, http_timeouts=TIMEOUTS, pages=pages)
        passes["process"] = measure_pass(fleet, clock)
        fleet.close()
        pages.close()
        store.close()
    server.terminate()
    hung = len(hanging)
    print(f"one metrics_rollup pass over {options.deployments} deployments, {hung} hanging "
          f"(connect {TIMEOUTS.connect_s:g} s, metrics {TIMEOUTS.metrics_s:g} s)")  # fmt: skip
    for name, what in (("inline", "in the pass's threads"), ("process", "by a page process")):
        wall_s, cpu_s, said = passes[name]
        print(f"  the pass, pages read {what + ':':<23}{wall_s:6.2f} s  ({said}), "
              f"{cpu_s:.2f} s of CPU in this process  target < 5 s: "
              f"{'ok' if wall_s < 5 else 'MISSED'}")  # fmt: skip
    print(f"  serial (the old way):  {serial_s:8.2f} s  (timed over {len(sample)}, scaled)")
    print(f"  ratio serial / the pass (inline): {serial_s / passes['inline'][0]:6.1f}x")
    inline_cpu, process_cpu = passes["inline"][1], passes["process"][1]
    print(f"  CPU in this process, inline / page process: {inline_cpu / process_cpu:6.1f}x")


def measure_pass(fleet: Fleet, clock: ManualClock) -> tuple[float, float, str]:
    """Warm up, then time one pass: its wall time, this process's CPU in it, what it said."""
    for deployment in fleet.deployments.list():  # their HTTP clients, built once
        fleet.backends.of(deployment)
    fleet.metrics.rollup_all()  # warm-up: connections, the baseline samples
    time.sleep(TIMEOUTS.metrics_s + 1)  # the hung scrapes of the warm-up give up
    clock.advance(60_000_000)
    started, cpu = time.perf_counter(), time.process_time()
    said = fleet.metrics.rollup_all()
    return time.perf_counter() - started, time.process_time() - cpu, said


if __name__ == "__main__":
    main()
