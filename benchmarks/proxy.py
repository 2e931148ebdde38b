"""What the proxy costs: latency added over a direct call, and time to first token while asleep.

1. **Added latency.** A stand-in (``--latency 0``) behind a ``ProxyServer`` in a separate
   process (its own interpreter, so the load generator's work never holds the proxy's GIL).
   The load process sends chat completions open-loop at 50 and 200 requests per second,
   in alternating rounds straight to the stand-in and through the proxy, on keep-alive
   connections, and prints p50 / p99 of both and the difference. Issue 16's target: p99
   added under 2 ms at 200 req/s.
2. **Where the time goes.** The same load against two more targets in the proxy's process:
   a bare ASGI app under uvicorn that answers a fixed body (the cost of one uvicorn hop),
   and the stand-in reached by httpx from that process with no ASGI server in front (the
   cost of one httpx hop). The proxy's own logic is what is left.
3. **Time to first token while asleep.** In this process: a deployment put to sleep by the
   deployer; a streamed chat completion through the proxy, timed to its first chunk, against
   the stand-in's own wake (``POST /wake_up``, then a streamed completion straight to it,
   timed to its first chunk). Issue 16's target: under 250 ms more.

    .venv/bin/python benchmarks/proxy.py [--seconds 2] [--rounds 4] [--wakes 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
STANDIN = (sys.executable, "-m", "dgxmm.standin")
CHAT = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}


def _fleet(data: Path) -> tuple[Any, Any, int]:
    """Return a store, a fleet with one stand-in deployment started, and the deployment's id."""
    from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
    from dgxmm.store import Store

    store = Store.open(data / "dgxmm.db", data_dir=data)
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )
    fleet = Fleet(store, inventory=inventory)
    port = _free_port()
    created = fleet.deployments.create(
        actor="user:bench", name="bench", model="bench-model", backend="process",
        command=[*STANDIN, "--port", "{port}", "--model", "bench-model", "--latency", "0"],
        port=port, gpus=[0], memory_gib_awake=40.0, memory_gib_asleep=4.0,
        startup_timeout_s=60.0,
    )  # fmt: skip
    fleet.deployer.start(created.id, actor="user:bench")
    return store, fleet, created.id


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- the proxy's process ----------------------------------------------------------------------


def serve_proxy(data: Path) -> None:
    """The child: a stand-in, the proxy, a bare app and an httpx relay; print URLs; wait."""
    import threading

    import uvicorn

    from dgxmm.proxy import ProxyApp, ProxyServer

    store, fleet, deployment_id = _fleet(data)
    proxy = ProxyServer(ProxyApp(fleet), port=_free_port())
    proxy.start()
    bare_port, relay_port = _free_port(), _free_port()
    standin = fleet.deployments.get(deployment_id).url

    async def bare(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        body = b'{"choices": []}'
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    servers = [
        uvicorn.Server(uvicorn.Config(bare, port=bare_port, log_level="warning", lifespan="off"))
    ]
    for server in servers:
        threading.Thread(target=server.run, daemon=True).start()
    relay = threading.Thread(target=_relay, args=(relay_port, standin), daemon=True)
    relay.start()
    while not all(server.started for server in servers):
        time.sleep(0.01)
    print(json.dumps({
        "direct": standin, "proxy": f"http://127.0.0.1:{proxy.port}",
        "bare": f"http://127.0.0.1:{bare_port}", "relay": f"http://127.0.0.1:{relay_port}",
    }), flush=True)  # fmt: skip
    sys.stdin.read()  # until the parent closes it
    proxy.stop()
    fleet.deployer.stop(deployment_id, actor="user:bench")
    fleet.close()
    store.close()


def _relay(port: int, standin: str) -> None:
    """A line-based TCP relay: each line is a request the child sends to the stand-in by httpx.

    It times one httpx hop from an event loop, with no ASGI server in front.
    """

    async def main() -> None:
        client = httpx.AsyncClient(trust_env=False, timeout=60)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while await reader.readline():
                response = await client.post(f"{standin}/v1/chat/completions", json=CHAT)
                writer.write(f"{response.status_code}\n".encode())
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# -- the load -----------------------------------------------------------------------------------


async def _open_loop(url: str, rate: float, seconds: float) -> list[float]:
    """Send chat completions at ``rate`` per second for ``seconds``; return latencies (s)."""
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(trust_env=False, timeout=60, limits=limits) as client:
        for _ in range(20):  # warm the connections
            await client.post(f"{url}/v1/chat/completions", json=CHAT)

        async def one() -> None:
            began = time.perf_counter()
            response = await client.post(f"{url}/v1/chat/completions", json=CHAT)
            if response.status_code == 200:
                latencies.append(time.perf_counter() - began)

        start = time.perf_counter()
        tasks = []
        for i in range(int(rate * seconds)):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one()))
        await asyncio.gather(*tasks)
    return latencies


async def _relayed(url: str, rate: float, seconds: float) -> list[float]:
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    pool = [await asyncio.open_connection(host, int(port)) for _ in range(64)]
    free: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for pair in pool:
        free.put_nowait(pair)

    async def one() -> None:
        reader, writer = await free.get()
        began = time.perf_counter()
        writer.write(b"go\n")
        await writer.drain()
        await reader.readline()
        latencies.append(time.perf_counter() - began)
        free.put_nowait((reader, writer))

    start = time.perf_counter()
    tasks = []
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one()))
    await asyncio.gather(*tasks)
    for _, writer in pool:
        writer.close()
    return latencies


async def _sequential(url: str, count: int) -> list[float]:
    """Send ``count`` chat completions one after the other; return latencies (s)."""
    latencies: list[float] = []
    async with httpx.AsyncClient(trust_env=False, timeout=60) as client:
        for i in range(count + 20):
            began = time.perf_counter()
            response = await client.post(f"{url}/v1/chat/completions", json=CHAT)
            if i >= 20 and response.status_code == 200:  # the first 20 warm up
                latencies.append(time.perf_counter() - began)
    return latencies


def sequential(urls: dict[str, str], count: int, rounds: int) -> None:
    print("\n0. one request at a time (ms; keep-alive): the added latency with no queueing")
    seen: dict[str, list[float]] = {name: [] for name in ("direct", "proxy", "bare")}
    for _ in range(rounds):
        for name in seen:
            seen[name] += asyncio.run(_sequential(urls[name], count))
    base50, base99 = _pct(seen["direct"], 0.5), _pct(seen["direct"], 0.99)
    print(f"{'target':>8} {'p50':>7} {'p99':>7} {'p50 +':>7} {'p99 +':>7}")
    for name, values in seen.items():
        p50, p99 = _pct(values, 0.5), _pct(values, 0.99)
        added = "" if name == "direct" else f"{p50 - base50:>+7.2f} {p99 - base99:>+7.2f}"
        print(f"{name:>8} {p50:>7.2f} {p99:>7.2f} {added}")


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def latency(urls: dict[str, str], rates: list[float], seconds: float, rounds: int) -> None:
    print("\n1-2. latency added over a direct call (ms; open loop, keep-alive)")
    print(f"{'req/s':>6} {'target':>8} {'p50':>7} {'p99':>7} {'p50 +':>7} {'p99 +':>7}")
    for rate in rates:
        seen: dict[str, list[float]] = {name: [] for name in ("direct", "proxy", "bare", "relay")}
        for _ in range(rounds):  # alternating, so drift of a shared machine hits all alike
            for name in ("direct", "proxy", "bare"):
                seen[name] += asyncio.run(_open_loop(urls[name], rate, seconds))
            seen["relay"] += asyncio.run(_relayed(urls["relay"], rate, seconds))
        base50, base99 = _pct(seen["direct"], 0.5), _pct(seen["direct"], 0.99)
        for name in ("direct", "proxy", "bare", "relay"):
            p50, p99 = _pct(seen[name], 0.5), _pct(seen[name], 0.99)
            added = "" if name == "direct" else f"{p50 - base50:>+7.2f} {p99 - base99:>+7.2f}"
            print(f"{rate:>6g} {name:>8} {p50:>7.2f} {p99:>7.2f} {added}")
        proxy99 = _pct(seen["proxy"], 0.99) - base99
        verdict = "met" if proxy99 < 2.0 else "NOT met"
        print(f"       p99 added through the proxy: {proxy99:.2f} ms; target < 2 ms: {verdict}")
    print(
        "  bare: one uvicorn hop answering a fixed body (no upstream); relay: one httpx hop "
        "from an event loop\n  to the stand-in (a line protocol in front, no HTTP parsing); "
        "their sum against the proxy's line\n  is the proxy's own logic."
    )


# -- time to first token while asleep ---------------------------------------------------------


def _first_chunk(client: httpx.Client, url: str) -> float:
    began = time.perf_counter()
    body = {**CHAT, "stream": True, "max_tokens": 4}
    took = None
    with client.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if took is None and line.startswith("data: "):
                took = time.perf_counter() - began
    assert took is not None
    return took


def wake(wakes: int) -> None:
    from dgxmm.proxy import ProxyApp, ProxyServer

    print("\n3. time to first token for a request that arrives while asleep (ms)")
    with tempfile.TemporaryDirectory() as data:
        store, fleet, deployment_id = _fleet(Path(data))
        proxy = ProxyServer(ProxyApp(fleet), port=_free_port())
        proxy.start()
        direct = fleet.deployments.get(deployment_id).url
        own: list[float] = []
        through: list[float] = []
        try:
            with httpx.Client(trust_env=False, timeout=60) as client:
                for _ in range(wakes):
                    client.post(f"{direct}/sleep?level=1")  # the stand-in's own wake
                    began = time.perf_counter()
                    client.post(f"{direct}/wake_up")
                    own.append(time.perf_counter() - began + _first_chunk(client, direct))
                    fleet.deployer.sleep(deployment_id, actor="user:bench")
                    through.append(_first_chunk(client, f"http://127.0.0.1:{proxy.port}"))
        finally:
            proxy.stop()
            fleet.deployer.stop(deployment_id, actor="user:bench")
            fleet.close()
            store.close()
    own_ms, through_ms = statistics.median(own) * 1000, statistics.median(through) * 1000
    print(f"  the stand-in's own wake + first token (median of {wakes}): {own_ms:8.1f}")
    print(f"  through the proxy, asleep (median of {wakes}):             {through_ms:8.1f}")
    more = through_ms - own_ms
    verdict = "met" if more < 250 else "NOT met"
    print(f"  more: {more:.1f} ms ({through_ms / own_ms:.1f}x); target < 250 ms: {verdict}")
    print(
        "  the proxy's wake is the deployer's normal path: wake, the start-up gate's health "
        "probe, the\n  post-wake check's completion, the event written, then the request "
        "forwarded."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per target and rate")
    parser.add_argument("--wakes", type=int, default=5)
    parser.add_argument(
        "--sequential", type=int, default=300, help="requests per round, one at a time"
    )
    parser.add_argument("--serve-proxy", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_proxy:
        serve_proxy(Path(args.serve_proxy))
        return
    with tempfile.TemporaryDirectory() as data:
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve-proxy", data],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        assert child.stdout is not None
        assert child.stdin is not None
        urls = json.loads(child.stdout.readline())
        try:
            sequential(urls, args.sequential, args.rounds)
            latency(urls, [50.0, 200.0], args.seconds, args.rounds)
        finally:
            child.stdin.close()
            child.wait(timeout=60)
    wake(args.wakes)


if __name__ == "__main__":
    main()
