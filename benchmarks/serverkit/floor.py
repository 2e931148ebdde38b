"""The server with its floor: ``dgxmm serve`` plus one static route, and the client that drives it.

The floor's route, ``/bench/floor/{name}``, answers a body captured from the real endpoint:
the same bytes through the same server stack, so a figure's ratio to it says what the
endpoint's own work costs over serving its answer. The load runs in a process of its own
(``http_load.py``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request, Response  # at module level: the floor's annotations

HTTP_LOAD = Path(__file__).resolve().parent.parent / "http_load.py"


def serve_with_floor(data: Path, port: int) -> None:
    """In the server process: ``dgxmm serve``, plus the floor's route on the same app."""
    serving = importlib.import_module("dgxmm.server.serve")  # the module, not the function

    create_app = serving.create_app
    bodies: dict[str, bytes] = {}

    def with_floor(*args: Any, **kwargs: Any) -> FastAPI:
        app = create_app(*args, **kwargs)

        @app.api_route("/bench/floor/{name}", methods=["GET", "POST"])
        async def floor(name: str, request: Request) -> Response:
            await request.body()  # a POST's body is read, as the real endpoint reads it
            if name not in bodies:  # written by the benchmark before it asks for it
                bodies[name] = (data / "floor" / name).read_bytes()
            kind = "text/html; charset=utf-8" if name.endswith(".html") else "application/json"
            return Response(bodies[name], media_type=kind)

        return app

    serving.create_app = with_floor
    serving.serve(serving.ServeOptions(data_dir=data, port=port, time_zone="UTC"))


def load(
    url: str, token: str, *, total: int, threads: int, interval: float = 0.0, seconds: float = 0.0
) -> dict[str, float]:
    """Run ``http_load.py`` in a process of its own: ``threads`` kept-alive connections."""
    done = subprocess.run(
        [
            sys.executable,
            str(HTTP_LOAD),
            url,
            token,
            str(total),
            str(threads),
            str(interval),
            str(seconds),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


class Bench:
    """The running server: its URL, the admin token, and the floor's bodies."""

    def __init__(self, base: str, token: str, data: Path) -> None:
        self.base = base
        self.token = token
        self._floor = data / "floor"
        self._floor.mkdir()
        self.client = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=600
        )

    def floor(self, name: str, body: bytes) -> str:
        """Keep ``body`` as the floor's answer ``name``; return its URL."""
        (self._floor / name).write_bytes(body)
        return f"{self.base}/bench/floor/{name}"

    def load(self, path_or_url: str, **kwargs: Any) -> dict[str, float]:
        url = path_or_url if "://" in path_or_url else self.base + path_or_url
        return load(url, self.token, **kwargs)

    def timed_post(self, path: str, body: Any) -> tuple[float, httpx.Response]:
        started = time.perf_counter()
        response = self.client.post(path, json=body)
        took = time.perf_counter() - started
        if response.status_code >= 400:
            raise SystemExit(f"POST {path}: {response.status_code} {response.text[:300]}")
        return took, response

    @contextlib.contextmanager
    def pass_inside(self, seconds: float) -> Iterator[None]:
        """Run one ``metrics_rollup`` pass a third of the way into a window of ``seconds``."""

        def later() -> None:
            time.sleep(seconds / 3)
            self.run_job("metrics_rollup")

        runner = threading.Thread(target=later, daemon=True)
        runner.start()
        yield
        runner.join()

    def run_job(self, name: str) -> float:
        """Run a job now; return the run's own duration in seconds (409 while it runs: retry)."""
        for _ in range(300):
            response = self.client.post("/api/jobs/run", json={"name": name})
            if response.status_code != 409:
                break
            time.sleep(0.2)
        body = response.json()
        if response.status_code != 200 or body["outcome"] != "succeeded":
            raise SystemExit(f"{name}: {response.status_code} {response.text[:300]}")
        return float(body["duration_ms"]) / 1000
