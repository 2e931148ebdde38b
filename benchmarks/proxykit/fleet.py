"""The fleet under test: two stand-in deployments, and the child process that serves dgxmm's
proxy in front of them."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

STANDIN = (sys.executable, "-m", "dgxmm.standin")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def standin_fleet(data: Path) -> tuple[Any, Any, dict[str, int]]:
    """Return a store, a fleet with the stand-in deployments started, and their ids by name."""
    from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
    from dgxmm.store import Store

    store = Store.open(data / "dgxmm.db", data_dir=data)
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )
    fleet = Fleet(store, inventory=inventory)
    ids: dict[str, int] = {}
    # bench: answers at once. slow: a streamed answer over 20 s, word by word (part 5).
    for name, model, latency in (("bench", "bench-model", "0"), ("slow", "bench-slow", "20000")):
        created = fleet.deployments.create(
            actor="user:bench", name=name, model=model, backend="process", port=free_port(),
            gpus=[0], memory_gib_awake=30.0, memory_gib_asleep=4.0,
            command=[*STANDIN, "--port", "{port}", "--model", model, "--latency", latency],
            startup_timeout_s=60.0,
        )  # fmt: skip
        fleet.deployer.start(created.id, actor="user:bench")
        ids[name] = created.id
    return store, fleet, ids


def serve_proxy(data: Path) -> None:
    """The child: the fleet's stand-ins and the proxy; print their URLs and its pid; wait."""
    from dgxmm.proxy import ProxyApp, ProxyServer

    store, fleet, ids = standin_fleet(data)
    proxy = ProxyServer(ProxyApp(fleet), port=free_port())
    proxy.start()
    print(json.dumps({
        "direct": fleet.deployments.get(ids["bench"]).url,
        "slow": fleet.deployments.get(ids["slow"]).url,
        "dgxmm": f"http://127.0.0.1:{proxy.port}", "pid": os.getpid(),
    }), flush=True)  # fmt: skip
    sys.stdin.read()  # until the parent closes it
    proxy.stop()
    for deployment_id in ids.values():
        fleet.deployer.stop(deployment_id, actor="user:bench")
    fleet.close()
    store.close()
