"""The house rules of docs/architecture.md: no module imports a layer above its own.

Every ``import`` of a ``dgxmm`` module counts, at the top of a file, inside a function, or
under ``TYPE_CHECKING``: a late import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dgxmm

SRC = Path(dgxmm.__file__).parent

# Outside the layers: imported by any of them, importing only each other.
FOUNDATION = (
    "dgxmm.errors",
    "dgxmm.time_units",
    "dgxmm.clock",
    "dgxmm.telemetry",
    "dgxmm.words",
)
# Lowest first: each layer may import the foundation and the layers before it.
LAYERS = (
    "dgxmm.jobs",
    "dgxmm.playground",  # the browser playground's engine: the jobs engine over sqlite3
    "dgxmm.places",  # the machine's zone and data directory (reads dgxmm.jobs' zones)
    "dgxmm.store",
    "dgxmm.fleet",
    "dgxmm.decider",
    "dgxmm.proxy",  # the OpenAI-compatible proxy: fleet and below (the decider reads activity)
    "dgxmm.lab",  # the savings lab: replays through the decider's and the proxy's own decisions
    "dgxmm.alerts",  # channels, rules, deliveries: reads what the layers below recorded
    "dgxmm.server",
    "dgxmm.cli",
    "dgxmm.__main__",
)
# Imports nothing of ours at all: it runs as its own process and must start fast.
ALONE = ("dgxmm.standin",)
# Import nothing of ours, but their layer may import them: they are shipped by value to the
# nodes of a Ray cluster, where dgxmm need not be installed.
SHIPPED = ("dgxmm.fleet.backends.ray_actor",)

# Inside a layer, its rooms: what each may not import (docs/architecture.md, "Rooms").
_STORE_ROOMS = ("dgxmm.store.catalog", "dgxmm.store.backups", "dgxmm.store.runs")
_FLEET_TOP = (
    "dgxmm.fleet.demo",
    "dgxmm.fleet.deployer",
    "dgxmm.fleet.service",
    "dgxmm.fleet.reattach",
    "dgxmm.fleet.reconciler",
    "dgxmm.fleet.settling",
)
_LAB_ROOMS = ("dgxmm.lab.traces", "dgxmm.lab.replay")
_LAB_TOP = (
    "dgxmm.lab.anchors",
    "dgxmm.lab.backtest",
    "dgxmm.lab.compare",
    "dgxmm.lab.durations",
    "dgxmm.lab.fleetfile",
    "dgxmm.lab.json_lines",
    "dgxmm.lab.ledger",
    "dgxmm.lab.oracle",
    "dgxmm.lab.picture",
)
_SERVER_ROOMS = (
    "dgxmm.server.edge",
    "dgxmm.server.host",
    "dgxmm.server.access",
    "dgxmm.server.lists",
    "dgxmm.server.api",
    "dgxmm.server.pages",
    "dgxmm.server.svg",
)
# What wires the server's rooms together: no room imports it.
_SERVER_TOP = ("dgxmm.server.app", "dgxmm.server.serve")


def _all_but(room: str) -> tuple[str, ...]:
    return tuple(other for other in _SERVER_ROOMS if other != room)


ROOM_RULES: dict[str, tuple[str, ...]] = {
    # The database, its schema and durable files sit under every room of the store.
    "dgxmm.store.database": (*_STORE_ROOMS, "dgxmm.store.store"),
    "dgxmm.store.schema": (*_STORE_ROOMS, "dgxmm.store.store"),
    "dgxmm.store.files": (*_STORE_ROOMS, "dgxmm.store.store"),
    # A backup copies the database; it never reads the catalog or the runs in it.
    "dgxmm.store.catalog": ("dgxmm.store.backups", "dgxmm.store.runs", "dgxmm.store.store"),
    "dgxmm.store.backups": ("dgxmm.store.catalog", "dgxmm.store.runs", "dgxmm.store.store"),
    # A run reads the catalog (its query, its effects), never the backups' machinery.
    "dgxmm.store.runs": ("dgxmm.store.backups", "dgxmm.store.store"),
    # The fleet's rooms sit under the deployer, the facade and the demo.
    "dgxmm.fleet.backends": _FLEET_TOP,
    "dgxmm.fleet.metrics": _FLEET_TOP,
    "dgxmm.fleet.deployments": (*_FLEET_TOP, "dgxmm.fleet.metrics"),
    "dgxmm.fleet.placement": (*_FLEET_TOP, "dgxmm.fleet.metrics"),
    # Where the requests come from knows nothing of what the lab does with them.
    "dgxmm.lab.traces": (*_LAB_TOP, "dgxmm.lab.replay"),
    # The replay sits under what runs it and shows it: the comparison, the backtest, the picture.
    "dgxmm.lab.replay": ("dgxmm.lab.compare", "dgxmm.lab.backtest", "dgxmm.lab.picture"),
    # The server's rooms, lowest first: the host and access know nothing of HTTP; the lists
    # are built below the routes that show them; the edge serves every route and knows none;
    # the charts draw what they are given; the API is below the pages that share its bodies.
    "dgxmm.server.host": (*_all_but("dgxmm.server.host"), *_SERVER_TOP),
    "dgxmm.server.access": (*_all_but("dgxmm.server.access"), *_SERVER_TOP),
    "dgxmm.server.svg": (*_all_but("dgxmm.server.svg"), *_SERVER_TOP),
    "dgxmm.server.lists": (
        "dgxmm.server.edge",
        "dgxmm.server.api",
        "dgxmm.server.pages",
        "dgxmm.server.svg",
        *_SERVER_TOP,
    ),
    "dgxmm.server.edge": (
        "dgxmm.server.lists",
        "dgxmm.server.api",
        "dgxmm.server.pages",
        "dgxmm.server.svg",
        *_SERVER_TOP,
    ),
    "dgxmm.server.api": ("dgxmm.server.pages", *_SERVER_TOP),
}
# A room's modules are its layer's business: another layer reaches them through the face
# (``dgxmm.store``, ``dgxmm.fleet``, ``dgxmm.lab``). Every module inside the fleet is behind its
# face; the store's top modules (its database, schema, files) and the lab's are not rooms.
_FLEET_INSIDE = (
    *_FLEET_TOP,
    "dgxmm.fleet.activity",
    "dgxmm.fleet.backends",
    "dgxmm.fleet.deployments",
    "dgxmm.fleet.metrics",
    "dgxmm.fleet.placement",
)
FACED = (*_STORE_ROOMS, *_FLEET_INSIDE, *_LAB_ROOMS)


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _home(module: str, homes: tuple[str, ...]) -> str | None:
    for home in homes:
        if module == home or module.startswith(home + "."):
            return home
    return None


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: a relative import"
            assert node.module is not None
            found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name == "dgxmm" or name.startswith("dgxmm.")]


def _refusal(importer: str, imported: str) -> str | None:
    """Say why ``importer`` may not import ``imported``, or None when it may."""
    if imported == "dgxmm":
        return None  # the package itself: its version
    room = _home(importer, tuple(ROOM_RULES))
    if room is not None and _home(imported, ROOM_RULES[room]):
        return f"{room} is below {_home(imported, ROOM_RULES[room])} in its layer"
    faced = _home(imported, FACED)
    if faced is not None:
        face = ".".join(faced.split(".")[:2])  # dgxmm.store, dgxmm.fleet
        if _home(importer, (face,)) is None:
            return f"another layer reaches {faced} through {face}"
    if _home(importer, ALONE):
        return None if _home(imported, ALONE) else "the stand-in imports nothing of ours"
    if _home(importer, SHIPPED):
        return "a module shipped to Ray's nodes imports nothing of ours"
    if _home(imported, ALONE):
        return "only a process started with python -m runs the stand-in"
    if _home(importer, FOUNDATION):
        return None if _home(imported, FOUNDATION) else "the foundation imports no layer"
    if _home(imported, FOUNDATION):
        return None
    mine, theirs = _home(importer, LAYERS), _home(imported, LAYERS)
    assert mine is not None, f"{importer} is in no layer: add it to LAYERS or FOUNDATION"
    assert theirs is not None, f"{imported} is in no layer: add it to LAYERS or FOUNDATION"
    if LAYERS.index(theirs) > LAYERS.index(mine):
        return f"{mine} is below {theirs}"
    return None


def test_no_module_imports_a_layer_above_its_own() -> None:
    broken = []
    for path in sorted(SRC.rglob("*.py")):
        if "migrations" in path.parts:
            continue  # Alembic's scripts: they import the store, which is their layer
        importer = _module_of(path)
        for line, imported in _imports(path):
            why = _refusal(importer, imported)
            if why is not None:
                broken.append(f"{path.relative_to(SRC.parent)}:{line} imports {imported}: {why}")
    assert broken == []


@pytest.mark.parametrize(
    ("importer", "imported", "refused"),
    [
        ("dgxmm.store.store", "dgxmm.jobs", False),
        ("dgxmm.jobs.cron.expression", "dgxmm.store", True),
        ("dgxmm.fleet.service", "dgxmm.decider.schedules", True),
        ("dgxmm.decider.profiles", "dgxmm.fleet", False),
        ("dgxmm.server.app", "dgxmm.cli.main", True),
        ("dgxmm.jobs.cron.expression", "dgxmm.time_units", False),
        ("dgxmm.clock", "dgxmm.jobs", True),
        ("dgxmm.standin.engine", "dgxmm.errors", True),
        ("dgxmm.fleet.demo.demo", "dgxmm.standin", True),
        ("dgxmm.fleet.backends.ray_actor", "dgxmm.errors", True),
        ("dgxmm.fleet.backends.ray", "dgxmm.fleet.backends.ray_actor", False),
        ("dgxmm.store.catalog.attic", "dgxmm.store.backups.directory", True),
        ("dgxmm.store.runs.query_runs", "dgxmm.store.catalog.effects", False),
        ("dgxmm.store.schema", "dgxmm.store.catalog.journal", True),
        ("dgxmm.server.pages.job", "dgxmm.store.runs.job_runs", True),
        ("dgxmm.fleet.placement.fit", "dgxmm.fleet.deployer", True),
        ("dgxmm.fleet.deployer", "dgxmm.fleet.placement.fit", False),
        ("dgxmm.decider.traffic", "dgxmm.fleet.deployments.tables", True),
        ("dgxmm.server.host.host", "dgxmm.server.edge.deps", True),
        ("dgxmm.server.edge.deps", "dgxmm.server.host", False),
        ("dgxmm.server.lists.jobs", "dgxmm.server.api.jobs", True),
        ("dgxmm.server.pages.deployment_form", "dgxmm.server.api.deployments", False),
        ("dgxmm.server.serve", "dgxmm.fleet.demo.demo", True),
        ("dgxmm.decider.traffic", "dgxmm.fleet", False),
        ("dgxmm.server.host.host", "dgxmm.store.database", False),
        ("dgxmm.lab.traces.workloads", "dgxmm.lab.replay.fleet", True),
        ("dgxmm.lab.traces.trace", "dgxmm.lab.ledger", True),
        ("dgxmm.lab.replay.fleet", "dgxmm.lab.traces.trace", False),
        ("dgxmm.lab.replay.proposed", "dgxmm.lab.compare", True),
        ("dgxmm.lab.compare", "dgxmm.lab.replay.fleet", False),
        ("dgxmm.cli.lab", "dgxmm.lab.replay.fleet", True),
    ],
    ids=[
        "store-jobs",
        "jobs-store",
        "fleet-decider",
        "decider-fleet",
        "server-cli",
        "jobs-foundation",
        "foundation-jobs",
        "standin-errors",
        "fleet-standin",
        "shipped-errors",
        "fleet-shipped",
        "catalog-backups",
        "runs-catalog",
        "schema-catalog",
        "server-store-room",
        "placement-deployer",
        "deployer-placement",
        "decider-fleet-room",
        "host-edge",
        "edge-host",
        "lists-api",
        "pages-api",
        "server-fleet-demo",
        "decider-fleet-face",
        "server-store-top",
        "traces-replay",
        "traces-lab-top",
        "replay-traces",
        "replay-compare",
        "compare-replay",
        "cli-lab-room",
    ],
)
def test_the_rule_refuses_what_it_should(importer: str, imported: str, refused: bool) -> None:
    assert (_refusal(importer, imported) is not None) is refused


def test_it_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "late.py"
    module.write_text("def f() -> None:\n    from dgxmm.server import Host\n")
    assert _imports(module) == [(2, "dgxmm.server")]


def _graph() -> dict[str, set[str]]:
    """Every module's imports of our modules (a name imported from a package that is a module
    of its own counts as that module; an ``__init__`` counts as its package)."""
    paths = {_module_of(path): path for path in SRC.rglob("*.py") if "migrations" not in path.parts}

    def known(name: str) -> str | None:
        while name not in paths and "." in name:
            name = name.rsplit(".", 1)[0]
        return name if name in paths else None

    graph: dict[str, set[str]] = {module: set() for module in paths}
    for module, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith("dgxmm."):
                    found = known(name)
                    if found is not None and found != module:
                        graph[module].add(found)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    # A circle inside a layer goes unseen by the floors' rule, and a late import inside a
    # function hides it from Python too.
    assert _circles(_graph()) == []


def test_it_finds_a_circle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
