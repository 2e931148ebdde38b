"""Issue 28's figures on a real server, each next to its floor: 10,000 jobs, 1,000 deployments.

One command starts what ``dgxmm serve`` starts (the same ``serve`` function: uvicorn with
httptools and uvloop where installed, the connection limits, the host's ticker, the fleet's
system jobs) on 127.0.0.1 with SQLite in a temporary directory, and 1,000 ``external``
deployments whose ``/metrics`` a child process answers on 1,000 loopback ports (the stand-in's
page, as ``benchmarks/rollups.py`` does). The only addition to the app is one route,
``/bench/floor/{name}``, that answers a body captured from the real endpoint as a static
answer: the floor is the same bytes through the same server stack, measured in the same run,
so the ratio says what the endpoint's own work costs over serving its answer.

The load runs in a separate process (``http_load.py``: kept-alive connections on one event
loop; a paced request's latency counts from its planned time). Printed, one line
per figure: the figure, its floor, the ratio and the issue's goal with ``ok`` or ``MISSED``:

- 1,000 one-at-a-time defines (``POST /api/jobs/define``) on the fresh server: total;
- a catalog import of 10,000 jobs (``POST /api/catalog/import``, one document);
- defines once the 10,000 are in: their median next to the first defines' median;
- ``GET /api/jobs?limit=100``, 4 clients, while a long query job runs: p99;
- ``GET /api/jobs`` unpaged at 10,000 jobs: p99, and whether every job was listed;
- ``GET /api/changes``, 50 clients polling every 2 s while jobs run and change (a long
  query job; a job switched twice a second) in a window clear of the minute's system jobs,
  then with one ``metrics_rollup`` pass inside the window: p99 each;
- the Deployments page with 1,000 deployments: p99 (the page's first 100 rows);
- one pass of ``schedule_runner`` (a schedule per deployment) and of ``metrics_rollup``
  (scraping every deployment), run through ``POST /api/jobs/run``: the run's own duration.

``--small`` runs every figure with tiny counts (the smoke test in ``tests/`` does).

    .venv/bin/python benchmarks/server.py [--jobs 10000] [--deployments 1000] [--small]
        [--figures defines,import,lists,changes,deployments,passes]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from serverkit.figures import FIGURES, measure  # noqa: E402
from serverkit.fixture import FULL, SMALL, Counts, free_port, prepare  # noqa: E402
from serverkit.floor import Bench, serve_with_floor  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="tiny counts: a smoke run")
    parser.add_argument("--jobs", type=int, help="jobs imported (default 10,000)")
    parser.add_argument("--deployments", type=int, help="deployments (default 1,000)")
    parser.add_argument(
        "--figures",
        default=",".join(FIGURES),
        help=f"which figures, comma-separated (default all: {','.join(FIGURES)})",
    )
    parser.add_argument("--serve", nargs=2, metavar=("DATA", "PORT"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:  # the server process
        serve_with_floor(Path(options.serve[0]), int(options.serve[1]))
        return
    figures = tuple(name.strip() for name in options.figures.split(",") if name.strip())
    if unknown := set(figures) - set(FIGURES):
        parser.error(f"--figures: {', '.join(sorted(unknown))} is not one of {', '.join(FIGURES)}")
    counts = SMALL if options.small else FULL
    counts = Counts(
        **{
            **{name: getattr(counts, name) for name in Counts.__slots__},  # type: ignore[attr-defined]
            **({"jobs": options.jobs} if options.jobs else {}),
            **({"deployments": options.deployments} if options.deployments else {}),
        }
    )
    from rollups import serve_many_ports  # the stand-in /metrics on many loopback ports

    receive, send = multiprocessing.Pipe(duplex=False)
    ports_process = multiprocessing.Process(
        target=serve_many_ports, args=(counts.deployments, 0, send), daemon=True
    )
    ports_process.start()
    ports, _ = receive.recv()
    with tempfile.TemporaryDirectory(prefix="dgxmm-bench-") as temporary:
        data = Path(temporary)
        token = prepare(data, ports)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(data), str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert server.stdout is not None
            while "serving on" not in (said := server.stdout.readline()):
                if not said:
                    raise SystemExit("the server did not start:\n" + server.stdout.read())
            print(f"dgxmm serve on 127.0.0.1:{port}, SQLite; {counts}", flush=True)
            measure(Bench(f"http://127.0.0.1:{port}", token, data), counts, data, figures)
        finally:
            server.send_signal(signal.SIGINT)
            server.communicate(timeout=120)
            ports_process.terminate()


if __name__ == "__main__":
    main()
