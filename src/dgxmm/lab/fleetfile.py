"""The fleet file: the machine and the deployments a replay runs, read and checked as a whole.

A JSON object with the machine's GPUs (as ``config.json`` lists them) and the deployments::

    {
      "gpus": [{"index": 0, "name": "H100", "memory_gib": 80}, {"index": 1, "memory_gib": 80}],
      "deployments": [
        {
          "name": "chat", "model": "llama-3.1-8b", "gpus": [0],
          "memory_gib_awake": 72, "memory_gib_asleep": 2, "memory_gib_asleep_2": 1,
          "sleep_level": 1, "priority": 80, "time_zone": "Europe/Berlin",
          "schedules": [{"action": "sleep", "days": ["mon", "tue"], "time": "20:00"},
                        {"action": "wake", "days": 31, "time": "07:30"}],
          "idle": {"sleep_after_s": 300, "deepen_after_s": 3600, "stop_after_s": 86400},
          "durations": {"wake_1": {"kind": "lognormal", "median_s": 0.5, "p90_s": 2}}
        }
      ]
    }

A deployment is held to the product's own rules, by the product's own checks: its name,
model, GPUs (in the file's machine), memory, priority, zone, sleep level and idle policy
(``idle_policy``: ``ladder``, ``histogram`` or ``priced``) and wait budget
(``idle_wait_budget``: ``{"mean_ms": 50, "p99_s": 5}``) by the fleet's
definition check (``check_definition``, as for an external deployment, which names no
command); its GPUs by the configuration's reader (``parse_gpu_config``); each schedule by
the decider's (``checked_changes``: the action, a days mask from 1 to 127, a strict
``HH:MM``, a zone). The lab adds what the product does not have: ``memory_gib_asleep_2``
(GiB per GPU at level 2, default ``memory_gib_asleep``), the idle policy (kept as given for
the idle ladder: each step optional, in seconds, later than the one before) and the
durations (``durations.py``). A deployment names at least one GPU, and no two deployments
share a name or a model (the lab routes a model's requests to one deployment).

A wrong file is refused whole, before anything runs: one ``DefinitionError`` whose
``field`` is the path of the first wrong field (``deployments[2].memory_gib_awake``) and
whose ``errors`` list every wrong one found, each message naming its line. The product's
definition check stops at a deployment's first wrong field, so a deployment gives one
error from it; the lab's own fields each give theirs. A file that is not JSON is refused at
the line and column of its syntax error.

How the line is found: ``json`` gives no positions for the values it parses, so the text
is walked once more (``json_lines.py``) to record the line of each key and list item by its
path. A field that is missing is placed on the line where its object begins. The same walk
finds keys given twice in one object, which ``json`` would silently keep the last of.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dgxmm.decider.days import ALL_DAYS, days_in
from dgxmm.decider.idle import IdleLadder
from dgxmm.decider.schedules.rows import ScheduleAction, checked_changes
from dgxmm.errors import DefinitionError, InvalidInput, NotFound
from dgxmm.fleet import (
    Gpu,
    GpuInventory,
    IdlePolicy,
    InventorySource,
    WaitBudget,
    check_definition,
    parse_gpu_config,
    parse_wait_budget,
)
from dgxmm.jobs.keys import Refusals
from dgxmm.lab.durations import ServerTimes
from dgxmm.lab.json_lines import key_lines, line_of
from dgxmm.lab.ledger import Footprint

__all__ = ["IdleLadder", "LabDeployment", "LabFleet", "LabSchedule", "parse_fleet", "read_fleet"]

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_TOP = ("gpus", "deployments")
_DEPLOYMENT = (
    "name",
    "model",
    "gpus",
    "memory_gib_awake",
    "memory_gib_asleep",
    "memory_gib_asleep_2",
    "sleep_level",
    "priority",
    "time_zone",
    "schedules",
    "idle",
    "idle_policy",
    "idle_wait_budget",
    "durations",
)
_REQUIRED = ("name", "model", "gpus", "memory_gib_awake", "memory_gib_asleep")
# What the fleet's definition check reads; the rest are the lab's own.
_PRODUCT = ("name", "model", "gpus", "memory_gib_awake", "memory_gib_asleep", "priority")
_SCHEDULE_REQUIRED = ("action", "days", "time")
_IDLE = ("sleep_after_s", "deepen_after_s", "stop_after_s")
# The definition check wants an external deployment's URL; the lab's servers have none.
_NO_URL = "http://lab.invalid"
# No number in a fleet file is this large; above it, Python's ints no longer fit a float,
# and the product's checks would fail converting them instead of refusing them.
_LARGEST = 2**63
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class LabSchedule:
    """One of a deployment's schedules, as the decider's runner reads one."""

    action: ScheduleAction
    days: int  # Monday 1, Tuesday 2, ... Sunday 64
    time: str  # local HH:MM
    time_zone: str  # the deployment's unless the schedule gives its own
    enabled: bool = True

    def to_json(self) -> dict[str, Any]:
        """Return it as a fleet file writes it."""
        return {
            "action": self.action.value,
            "days": [DAY_NAMES[day] for day in days_in(self.days)],
            "time": self.time,
            "time_zone": self.time_zone,
            "enabled": self.enabled,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LabDeployment:
    """One deployment of the fleet file: what it serves, where, what it holds, how it rests."""

    name: str
    model: str  # the trace's model it serves
    gpus: tuple[int, ...]
    memory_gib_awake: float  # per GPU
    memory_gib_asleep: float  # per GPU, asleep at level 1
    memory_gib_asleep_2: float  # per GPU, asleep at level 2
    sleep_level: int  # where a sleep goes (a schedule's, the idle policy's first step)
    priority: int  # 0-100
    time_zone: str
    schedules: tuple[LabSchedule, ...] = ()
    idle: IdleLadder = field(default_factory=IdleLadder)
    idle_policy: IdlePolicy = IdlePolicy.LADDER  # the product's: under the idle rules, its own
    # The product's wait budget: what ``decider.idle.budget`` spends by choosing the price.
    idle_wait_budget: WaitBudget | None = None
    durations: ServerTimes = field(default_factory=ServerTimes)

    @property
    def footprint(self) -> Footprint:
        """Return its memory in each phase, summed over its GPUs."""
        count = len(self.gpus)
        return Footprint(
            awake_gib=self.memory_gib_awake * count,
            level_1_gib=self.memory_gib_asleep * count,
            level_2_gib=self.memory_gib_asleep_2 * count,
        )

    def to_json(self) -> dict[str, Any]:
        """Return it as a fleet file writes it (every field, the durations in full)."""
        return {
            "name": self.name,
            "model": self.model,
            "gpus": list(self.gpus),
            "memory_gib_awake": self.memory_gib_awake,
            "memory_gib_asleep": self.memory_gib_asleep,
            "memory_gib_asleep_2": self.memory_gib_asleep_2,
            "sleep_level": self.sleep_level,
            "priority": self.priority,
            "time_zone": self.time_zone,
            "schedules": [schedule.to_json() for schedule in self.schedules],
            "idle": self.idle.to_json(),
            "idle_policy": self.idle_policy.value,
            "idle_wait_budget": (
                None if self.idle_wait_budget is None else self.idle_wait_budget.to_json()
            ),
            "durations": self.durations.to_json(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LabFleet:
    """The machine's GPUs and the deployments on them."""

    gpus: tuple[Gpu, ...]
    deployments: tuple[LabDeployment, ...]

    @property
    def inventory(self) -> GpuInventory:
        """Return the machine as the fit check reads one."""
        return GpuInventory(
            gpus=self.gpus, source=InventorySource.CONFIGURATION, note="the fleet file's machine"
        )

    def deployment(self, name: str) -> LabDeployment:
        """Return the deployment of this name (``NotFound``)."""
        for deployment in self.deployments:
            if deployment.name == name:
                return deployment
        raise NotFound("deployment", name)

    def footprint(self, name: str) -> Footprint:
        """Return a deployment's memory in each phase, summed over its GPUs (``NotFound``)."""
        return self.deployment(name).footprint

    def to_json(self) -> dict[str, Any]:
        """Return it as a fleet file writes it: ``parse_fleet`` reads it back equal."""
        return {
            "gpus": [_gpu_json(gpu) for gpu in self.gpus],
            "deployments": [deployment.to_json() for deployment in self.deployments],
        }


def read_fleet(path: Path | str) -> LabFleet:
    """Read and check a fleet file; ``DefinitionError`` names each wrong field and its line."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM an editor left is no error
    except (OSError, UnicodeDecodeError) as error:
        raise DefinitionError(source, f"cannot be read: {error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DefinitionError(
            source, f"line {error.lineno}, column {error.colno}: not JSON: {error.msg}"
        ) from None
    except RecursionError:
        raise DefinitionError(source, "is nested too deep to be a fleet file") from None
    return parse_fleet(document, source, text=text)


def parse_fleet(document: object, source: str, *, text: str | None = None) -> LabFleet:
    """Check a fleet file's document; ``DefinitionError`` names each wrong field.

    ``source`` names the file in the messages; ``text``, the JSON the document was read
    from, lets each message name its line (without it, none is named).
    """
    lines, twice = key_lines(text) if text is not None else ({}, [])
    refusals = Refusals()
    for path in twice:
        refusals.found.append(DefinitionError(path, "is given twice (JSON would keep the last)"))
    fleet = _fleet(document, refusals)
    if refusals.found:
        found = [(error.field, error.message) for error in refusals.found]
        found.sort(key=lambda wrong: line_of(wrong[0], lines) or 0)
        placed = Refusals()
        for path, message in found:
            line = line_of(path, lines)
            where = f"line {line} of {source}" if line is not None else f"in {source}"
            placed.found.append(DefinitionError(path, f"{where}: {message}"))
        placed.raise_any()
    assert fleet is not None  # no refusal: every part was read
    return fleet


def _fleet(document: object, refusals: Refusals) -> LabFleet | None:
    """Read the whole document, keeping each refusal; None when any part was refused."""
    if not isinstance(document, dict):
        refusals.found.append(DefinitionError("", "a fleet file is a JSON object"))
        return None
    too_large = _too_large(document)
    if too_large:
        refusals.found.extend(too_large)
        return None
    for key in document:
        if key not in _TOP:
            refusals.found.append(DefinitionError(key, f"{key!r} is not a field of a fleet file"))
    gpus = refusals.check(lambda: _gpus(document.get("gpus")))
    entries = document.get("deployments")
    if not isinstance(entries, list) or not entries:
        refusals.found.append(
            DefinitionError("deployments", "give the deployments as a list of objects")
        )
        return None
    inventory = None
    if gpus is not None:
        inventory = GpuInventory(
            gpus=gpus, source=InventorySource.CONFIGURATION, note="the fleet file's machine"
        )
    deployments = [
        _deployment(entry, f"deployments[{i}]", inventory, refusals)
        for i, entry in enumerate(entries)
    ]
    _unshared(deployments, refusals)
    if refusals.found or gpus is None:
        return None
    return LabFleet(gpus=gpus, deployments=tuple(d for d in deployments if d is not None))


def _gpus(entries: object) -> tuple[Gpu, ...]:
    if not isinstance(entries, list) or not entries:
        raise DefinitionError("gpus", "give the machine's GPUs as a list of objects")
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise DefinitionError(f"gpus[{position}]", "give a GPU as an object")
    return parse_gpu_config(entries)


def _deployment(
    entry: object, where: str, inventory: GpuInventory | None, refusals: Refusals
) -> LabDeployment | None:
    """Read one deployment, keeping its refusals; None when any was refused."""
    before = len(refusals.found)
    if not isinstance(entry, dict):
        refusals.found.append(DefinitionError(where, "give a deployment as an object"))
        return None
    for key in entry:
        if key not in _DEPLOYMENT:
            refusals.found.append(
                DefinitionError(f"{where}.{key}", f"{key!r} is not a deployment field")
            )
    missing = [key for key in _REQUIRED if key not in entry]
    for key in missing:
        refusals.found.append(DefinitionError(f"{where}.{key}", "a deployment needs it"))
    if missing:  # the definition check would only say so again
        return None
    own = (*_PRODUCT, "time_zone", "sleep_level", "idle_policy", "idle_wait_budget")
    keys = {key: entry[key] for key in own if key in entry}
    if inventory is None:  # the machine was refused: its GPUs cannot be checked against it
        keys.pop("gpus")
    checked = _within(
        refusals,
        where,
        lambda: check_definition(
            {**keys, "backend": "external", "base_url": _NO_URL},
            inventory or GpuInventory(gpus=(), source=InventorySource.CONFIGURATION),
        ),
    )
    if checked is not None and not json.loads(checked["gpus"]) and inventory is not None:
        refusals.found.append(
            DefinitionError(f"{where}.gpus", "a deployment in the lab names at least one GPU")
        )
    zone = checked["time_zone"] if checked is not None else "UTC"
    level_1 = checked["memory_gib_asleep"] if checked is not None else None
    asleep_2 = _within(refusals, where, lambda: _asleep_2(entry, level_1))
    schedules = _schedules(entry.get("schedules", []), f"{where}.schedules", zone, refusals)
    idle = _within(refusals, where, lambda: _idle(entry.get("idle", {})))
    durations = _within(
        refusals, where, lambda: ServerTimes().overridden(entry.get("durations", {}), "durations")
    )
    if len(refusals.found) > before or checked is None:
        return None
    assert asleep_2 is not None
    assert idle is not None
    assert durations is not None
    return LabDeployment(
        name=checked["name"],
        model=checked["model"],
        gpus=tuple(json.loads(checked["gpus"])),
        memory_gib_awake=checked["memory_gib_awake"],
        memory_gib_asleep=checked["memory_gib_asleep"],
        memory_gib_asleep_2=asleep_2,
        sleep_level=checked["sleep_level"],
        priority=checked["priority"],
        time_zone=zone,
        schedules=tuple(schedules),
        idle=idle,
        idle_policy=IdlePolicy(checked["idle_policy"]),
        idle_wait_budget=(
            parse_wait_budget(json.loads(checked["idle_wait_budget"]))
            if checked["idle_wait_budget"]
            else None
        ),
        durations=durations,
    )


def _within(refusals: Refusals, where: str, check: Callable[[], _T]) -> _T | None:
    """Run one check of the part at ``where``; keep its refusal, the field under ``where``."""

    def placed() -> _T:
        try:
            return check()
        except InvalidInput as error:  # a ZoneError too: every refusal becomes a field's
            path = f"{where}.{error.field}" if error.field else where
            raise DefinitionError(path, error.message) from None

    return refusals.check(placed)


def _asleep_2(entry: Mapping[str, Any], level_1: float | None) -> float:
    """Return the GiB per GPU at level 2 (``level_1``: the checked level-1 GiB, if known)."""
    value = entry.get("memory_gib_asleep_2", level_1 or 0.0)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise DefinitionError("memory_gib_asleep_2", f"{value!r} is not a number of GiB")
    if not math.isfinite(value) or value < 0:
        raise DefinitionError("memory_gib_asleep_2", f"{value!r} must be 0 or more GiB")
    if level_1 is not None and value > level_1:
        raise DefinitionError(
            "memory_gib_asleep_2",
            f"{value!r} GiB is more than it holds at level 1 ({level_1:g} GiB)",
        )
    return float(value)


def _schedules(entries: object, where: str, zone: str, refusals: Refusals) -> list[LabSchedule]:
    if not isinstance(entries, list):
        refusals.found.append(DefinitionError(where, "give the schedules as a list of objects"))
        return []
    schedules: list[LabSchedule] = []
    for position, entry in enumerate(entries):
        schedule = _within(
            refusals, f"{where}[{position}]", functools.partial(_schedule, entry, zone)
        )
        if schedule is not None:
            schedules.append(schedule)
    return schedules


def _schedule(entry: object, zone: str) -> LabSchedule:
    if not isinstance(entry, dict):
        raise DefinitionError("", "give a schedule as an object: action, days, time")
    for key in _SCHEDULE_REQUIRED:
        if key not in entry:
            raise DefinitionError(key, "a schedule needs it")
    keys = {**entry, "days": _days(entry["days"])}
    values = checked_changes(keys)  # the decider's own check, field by field
    return LabSchedule(
        action=ScheduleAction(values["action"]),
        days=values["days"],
        time=values["at_time"],
        time_zone=values.get("time_zone", zone),
        enabled=values.get("enabled", True),
    )


def _days(value: object) -> object:
    """Return a list of day names as the decider's days mask; leave a mask to its check."""
    if not isinstance(value, list):
        return value
    if not value:
        raise DefinitionError("days", "give at least one day (mon ... sun)")
    mask = 0
    for position, name in enumerate(value):
        spoken = name.lower() if isinstance(name, str) else name
        if spoken not in DAY_NAMES:
            raise DefinitionError(f"days[{position}]", f"{name!r} is not a day (mon ... sun)")
        mask |= 1 << DAY_NAMES.index(spoken)
    assert mask <= ALL_DAYS
    return mask


def _idle(value: object) -> IdleLadder:
    """Read the idle ladder by the decider's own check (``IdleLadder.of_seconds``)."""
    if not isinstance(value, dict):
        raise DefinitionError("idle", f"give the idle policy as an object of {', '.join(_IDLE)}")
    for key in value:
        if key not in _IDLE:
            raise DefinitionError(f"idle.{key}", f"is not a step (one of {', '.join(_IDLE)})")
    return IdleLadder.of_seconds(**value, field_prefix="idle.")


def _unshared(deployments: list[LabDeployment | None], refusals: Refusals) -> None:
    """Refuse a second deployment of one name, or of one model."""
    names: dict[str, int] = {}
    models: dict[str, int] = {}
    for position, deployment in enumerate(deployments):
        if deployment is None:
            continue
        where = f"deployments[{position}]"
        if deployment.name in names:
            refusals.found.append(
                DefinitionError(
                    f"{where}.name",
                    f"{deployment.name!r} is the name of deployments[{names[deployment.name]}]",
                )
            )
        if deployment.model in models:
            refusals.found.append(
                DefinitionError(
                    f"{where}.model",
                    f"{deployment.model!r} is served by deployments[{models[deployment.model]}]"
                    " already (the lab routes a model to one deployment)",
                )
            )
        names.setdefault(deployment.name, position)
        models.setdefault(deployment.model, position)


def _too_large(document: dict[str, Any]) -> list[DefinitionError]:
    """Refuse every integer too large for a number in a fleet file, by its path."""
    found: list[DefinitionError] = []
    stack: list[tuple[str, object]] = [("", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{path}.{key}" if path else str(key), v) for key, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _LARGEST:
            found.append(DefinitionError(path, f"{str(value)[:20]}... is too large a number"))
    return sorted(found, key=lambda error: error.field)


def _gpu_json(gpu: Gpu) -> dict[str, Any]:
    written: dict[str, Any] = {"index": gpu.index, "name": gpu.name, "memory_gib": gpu.memory_gib}
    if gpu.uuid is not None:
        written["uuid"] = gpu.uuid
    return written
