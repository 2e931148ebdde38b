"""``dgxmm serve``: open the store, start the host's ticker, serve the app with uvicorn.

With ``proxy_port``, the OpenAI-compatible proxy (``dgxmm.proxy``) serves on that port too,
on its own thread, before the app listens; it stops first.

Ctrl-C (SIGINT) or SIGTERM stops uvicorn; then the host stops ticking, gives up the runs
under way with a reason, the fleet closes its connections (model servers keep running; the
demo's stand-ins are stopped) and its page reader, and the store flushes its statistics and closes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from dgxmm.alerts import KEY_FILE, Alerts, Destinations, KeyFile
from dgxmm.clock import FastClock, from_us
from dgxmm.decider.demo import propose_now, schedule_a_sleep_to_watch
from dgxmm.decider.idle.budgets import WaitBudgets
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.errors import Busy, InvalidInput
from dgxmm.fleet import (
    DEMO_RAY_NODES,
    Demo,
    Fleet,
    LocalCluster,
    PageProcess,
    discover_inventory,
    prepare_demo_gpus,
    ray_missing,
)
from dgxmm.jobs import resolve_zone
from dgxmm.lab.backtest import proposal_backtester
from dgxmm.lab.trade import budget_traffic
from dgxmm.places import ADMIN_TOKEN_FILE, DEFAULT_DATA_DIR, SERVER_FILE, machine_zone
from dgxmm.proxy import API_LIMITS, ProxyApp, ProxyServer, limited_protocol
from dgxmm.server.access.redaction import public_text
from dgxmm.server.access.tokens import Tokens
from dgxmm.server.app import (
    ALERT_ROUTES,
    FLEET_ROUTES,
    PROPOSAL_ROUTES,
    SCHEDULE_ROUTES,
    create_app,
)
from dgxmm.server.host import Host
from dgxmm.server.host.heap import Heap
from dgxmm.server.host.lease import second_server
from dgxmm.server.services import Services
from dgxmm.server.telemetry import ServerMetrics
from dgxmm.store import Dialect, Store
from dgxmm.store.files import make_private_dir, write_atomic

__all__ = ["ServeOptions", "machine_zone", "serve"]

DEFAULT_DATA = DEFAULT_DATA_DIR


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    """What ``dgxmm serve`` was asked for."""

    data_dir: Path = DEFAULT_DATA
    db: str | None = None  # a PostgreSQL URL or a SQLite path; default: <data>/dgxmm.db
    host: str = "127.0.0.1"
    port: int = 8000
    time_zone: str | None = None  # default: the machine's zone
    tick_seconds: float = 5.0
    demo: bool = False  # three stand-in deployments with a little traffic
    proxy_host: str = "127.0.0.1"
    proxy_port: int | None = None  # the OpenAI-compatible proxy's port; None: no proxy
    ray: bool = False  # with demo: on a local Ray cluster of two nodes with pretend GPUs
    # A test and demo facility: RATE@ANCHOR makes this server's clock run RATE times faster
    # from the instant ANCHOR (``clock.FastClock``); None: the machine's clock.
    fast_clock: str | None = None
    # Alert channels may point at private networks and this machine (docs/alerts.md).
    alerts_allow_private_networks: bool = False


class _Stop(Exception):
    """Ctrl-C or SIGTERM, after uvicorn's own graceful stop."""


def _raise_stop(signum: int, _frame: object) -> None:
    raise _Stop(signal.Signals(signum).name)


class _Server(uvicorn.Server):
    """uvicorn's server, telling when it listens."""

    def __init__(self, config: uvicorn.Config, *, ready: Callable[[], None]) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._ready()


def local_url(host: str, port: int) -> str:
    """Return the URL a client on this machine reaches a server listening on ``host`` at."""
    if host in ("", "0.0.0.0"):  # every address: this machine's loopback is one of them
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _announce(data_dir: Path, url: str) -> bytes:
    """Write where this server listens into the data directory, for ``dgxmm`` commands."""
    content = json.dumps({"url": url, "pid": os.getpid()}).encode()
    write_atomic(data_dir / SERVER_FILE, content, durable=False)
    return content


def _withdraw(data_dir: Path, content: bytes | None) -> None:
    """Remove the server file, unless another server has written its own since."""
    path = data_dir / SERVER_FILE
    try:
        if content is not None and path.read_bytes() == content:
            path.unlink()
    except FileNotFoundError:
        pass


def serve(options: ServeOptions, *, say: Callable[[str], None] = print) -> None:
    """Run the server until Ctrl-C."""
    if options.ray and not options.demo:
        raise InvalidInput("--ray", "goes with --demo (a deployment names its own Ray cluster)")
    clock = _fast_clock(options.fast_clock)
    data_dir = options.data_dir.expanduser().absolute()
    make_private_dir(data_dir)  # 0700: it holds the database and the admin token
    zone = resolve_zone(options.time_zone or machine_zone(), field="time_zone").key
    store = Store.open(options.db or data_dir / "dgxmm.db", data_dir=data_dir, clock=clock)
    if clock is not None:
        anchor = from_us(clock.anchor_us).isoformat()
        say(f"dgxmm: FAST CLOCK (a test facility): time runs {clock.rate:g}x from {anchor}")
    if store.dialect is Dialect.SQLITE and not store.presence.try_lease():
        store.close()  # before it writes anything: the running server's files are its own
        raise second_server(store)
    tokens = Tokens(store.engine, store.clock)
    store.protect_paths([data_dir / ADMIN_TOKEN_FILE], what="the server's admin token")
    store.protect_paths(
        [data_dir / KEY_FILE, data_dir / f"{KEY_FILE}.next"], what="the alerts' sealing key"
    )
    created = tokens.ensure_admin_token(data_dir)
    if created is not None:
        say(f"dgxmm: created an admin token in {created} (mode 0600); read it with: cat {created}")
    if options.demo and prepare_demo_gpus(data_dir):
        say(f"dgxmm: demo: wrote two pretend GPUs into {data_dir / 'config.json'}")
    local_ray = _start_local_ray(say) if options.ray else None
    try:
        _serve(
            options,
            store=store,
            tokens=tokens,
            data_dir=data_dir,
            zone=zone,
            ray=local_ray,
            say=say,
        )
    finally:
        if local_ray is not None:
            local_ray.shutdown()
            say("dgxmm: demo: the local Ray cluster is shut down")


def _fast_clock(spec: str | None) -> FastClock | None:
    if spec is None:
        return None
    try:
        return FastClock.parse(spec)
    except ValueError as error:
        raise InvalidInput("--fast-clock", str(error)) from None


def _start_local_ray(say: Callable[[str], None]) -> LocalCluster:
    missing = ray_missing()
    if missing is not None:
        raise InvalidInput("--ray", missing)
    say("dgxmm: demo: starting a local Ray cluster of two nodes with pretend GPUs")
    cluster = LocalCluster(DEMO_RAY_NODES)
    address = cluster.start()
    say(f"dgxmm: demo: Ray cluster at {address} (127.0.0.1 only)")
    return cluster


def _serve(
    options: ServeOptions,
    *,
    store: Store,
    tokens: Tokens,
    data_dir: Path,
    zone: str,
    ray: LocalCluster | None,
    say: Callable[[str], None],
) -> None:
    metrics = ServerMetrics()  # the fleet, the schedule runner and the host count into it
    # The servers' /metrics and /health, read for every pass, by a child process: their
    # HTTP and parsing would otherwise hold the API's requests behind the GIL during a pass.
    pages = PageProcess()
    pages.start()
    fleet = Fleet(store, inventory=discover_inventory(data_dir), telemetry=metrics, pages=pages)
    schedules = ScheduleService(store, fleet)
    proposals = ProposalService(
        store, fleet, schedules, backtest=proposal_backtester(fleet, schedules)
    )
    # The wait budgets' daily price, found by the lab's replay of each one's own weeks.
    budgets = WaitBudgets(
        store, fleet, replay=lambda d, now: budget_traffic(fleet, schedules, d, now)
    )
    # The key that seals the alert channels' URLs and secrets: outside the database, so a
    # backup holds only ciphertext (docs/alerts.md); instances on one PostgreSQL share it.
    alerts = Alerts(
        store,
        fleet,
        key=KeyFile(data_dir),
        schedules=schedules,
        shown=lambda text: public_text(text) or "",
        destinations=Destinations(allow_private=options.alerts_allow_private_networks),
    )
    host = Host(
        store,
        time_zone=zone,
        tick_seconds=options.tick_seconds,
        system_jobs=[
            *fleet.system_jobs(),
            *schedules.system_jobs(),
            *proposals.system_jobs(),
            *budgets.system_jobs(),
            *alerts.system_jobs(),
        ],
        telemetry=metrics,
        lease=True,
        pulses=[schedules.idle_pulse, alerts.pulse],
    )
    proxy = (
        ProxyServer(ProxyApp(fleet), host=options.proxy_host, port=options.proxy_port)
        if options.proxy_port is not None
        else None
    )
    proxy_url = (
        local_url(options.proxy_host, options.proxy_port)
        if options.proxy_port is not None
        else None
    )
    app = create_app(
        Services(
            host=host,
            tokens=tokens,
            fleet=fleet,
            schedules=schedules,
            proposals=proposals,
            metrics=metrics,
            proxy=proxy.app.stats if proxy is not None else None,
            proxy_url=proxy_url,
            proxy_check_key=proxy.app.check_key if proxy is not None else None,
            alerts=alerts,
            budgets=budgets,
        ),
        [FLEET_ROUTES, SCHEDULE_ROUTES, PROPOSAL_ROUTES, ALERT_ROUTES],
    )
    if proxy is not None:  # first: a port taken fails before anything else runs
        proxy.start()
        say(
            f"dgxmm: OpenAI-compatible proxy on {proxy_url}/v1 (requests wake sleeping deployments)"
        )
    host.start()
    alerts.start()  # sends on every instance; evaluates on the pulses of the lease holder
    demo = (
        Demo(
            fleet,
            say=say,
            after_history=lambda: propose_now(proposals),
            quiet=lambda d: schedule_a_sleep_to_watch(schedules, d, store.clock.now_us()),
            ray_address=ray.address if ray is not None else None,
            proxy_url=proxy_url,
        )
        if options.demo
        else None
    )
    if demo is not None:
        demo.start()
    # Everything is loaded: what lives now is frozen, so that no full collection walks it
    # again (server/host/heap.py: they paused every request for hundreds of ms).
    heap = Heap()
    heap.start()
    url = local_url(options.host, options.port)
    announced: list[bytes] = []

    def ready() -> None:
        announced.append(_announce(data_dir, url))
        say(
            f"dgxmm: serving on http://{options.host}:{options.port} "
            f"(data: {data_dir}, database: {store.dialect}, time zone: {zone}); Ctrl-C stops"
        )

    server = _Server(
        uvicorn.Config(
            app,
            host=options.host,
            port=options.port,
            log_level="warning",
            lifespan="off",
            # A header timeout and a connection cap (docs/server.md): half-sent requests
            # must not hold the file descriptors the store and the jobs need.
            http=limited_protocol(API_LIMITS),
            # A request waiting for a long job (POST /api/jobs/run) must not hold the stop up:
            # after this, uvicorn lets go of it and the host gives the run up below.
            timeout_graceful_shutdown=3,
        ),
        ready=ready,
    )
    # uvicorn stops gracefully on SIGINT / SIGTERM, then raises the signal again once it has
    # put the previous handlers back: these turn that into an exception, so the host and the
    # store still shut down below instead of the process dying on the spot.
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run()
    except _Stop:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _withdraw(data_dir, announced[0] if announced else None)
        if proxy is not None:
            proxy.stop()
        if demo is not None:
            demo.stop()
        for result in host.stop():
            say(f"dgxmm: gave up job {result.name}: {result.error}")
        alerts.stop()  # a send under way ends within its timeout
        schedules.close()  # scheduled actions under way finish on their threads
        fleet.close()
        pages.close()
        heap.stop()
        try:
            store.close()
        except Busy as error:
            say(f"dgxmm: statistics flushed; the database closes at exit ({error})")
        say("dgxmm: stopped")
