"""Helpers of the lab's tests: the fleets they replay, and the real Azure hour.

``lab_deployment`` and ``lab_fleet`` build the one deployment most tests replay (``chat`` on
GPU 0 of one 80 GiB H100, 70 GiB awake, 2 and 1 asleep, in Berlin) with keyword overrides,
so that a test names only what it is about. A test of the command writes one as a fleet
file with ``LabFleet.to_json`` (every field given), most often ``COMMAND_FLEET``.

The Azure LLM inference trace 2023 (Patel et al., "Splitwise", ISCA 2024; CC-BY 4.0) lies at
``../shared/data/azure-llm-2023/`` from the project's root. A clone elsewhere has no such
folder: on a developer's machine the tests that read it skip; under ``CI=true`` they fail.

Import as ``from lab.labkit import ...`` (tests/ is on pytest's pythonpath).
"""

from __future__ import annotations

from pathlib import Path

from support import need

from dgxmm.decider.idle import IdleLadder
from dgxmm.decider.schedules import ScheduleAction
from dgxmm.fleet import Gpu
from dgxmm.lab import (
    Fixed,
    LabDeployment,
    LabFleet,
    LabSchedule,
    ServerTimes,
    Trace,
    read_azure_trace,
)
from dgxmm.lab.traces.workloads import AZURE_DIR
from dgxmm.time_units import SECOND_US

__all__ = ["COMMAND_FLEET", "FIXED_TIMES", "azure", "lab_deployment", "lab_fleet"]

# Fixed level-1, stop and start steps, so that every expected instant is exact; level 2
# keeps the published figures.
FIXED_TIMES = ServerTimes(
    sleep_1=Fixed(value_us=2 * SECOND_US),
    wake_1=Fixed(value_us=4 * SECOND_US),
    stop=Fixed(value_us=3 * SECOND_US),
    start=Fixed(value_us=50 * SECOND_US),
)


def lab_deployment(
    name: str = "chat",
    *,
    model: str | None = None,
    gpus: tuple[int, ...] = (0,),
    memory_gib_awake: float = 70.0,
    memory_gib_asleep: float = 2.0,
    memory_gib_asleep_2: float = 1.0,
    sleep_level: int = 1,
    priority: int = 50,
    time_zone: str = "Europe/Berlin",
    schedules: tuple[LabSchedule, ...] = (),
    idle: IdleLadder | None = None,
    durations: ServerTimes | None = None,
) -> LabDeployment:
    """Return a deployment serving ``model`` (its name unless given); the rest as overridden.

    Without ``idle`` and ``durations`` it has what a fleet file that gives neither has: no
    idle ladder of its own, and the published durations.
    """
    return LabDeployment(
        name=name,
        model=name if model is None else model,
        gpus=gpus,
        memory_gib_awake=memory_gib_awake,
        memory_gib_asleep=memory_gib_asleep,
        memory_gib_asleep_2=memory_gib_asleep_2,
        sleep_level=sleep_level,
        priority=priority,
        time_zone=time_zone,
        schedules=schedules,
        idle=IdleLadder() if idle is None else idle,
        durations=ServerTimes() if durations is None else durations,
    )


def lab_fleet(*deployments: LabDeployment, gpus: int = 1) -> LabFleet:
    """Return the deployments on a machine of ``gpus`` H100s of 80 GiB, indexed from 0.

    Built as given, not checked as a fleet file is: the picture's test draws a name with
    markup in it, which ``parse_fleet`` refuses.
    """
    assert deployments, "a fleet has at least one deployment"
    machine = tuple(Gpu(index=i, name="H100", memory_gib=80.0) for i in range(gpus))
    return LabFleet(gpus=machine, deployments=deployments)


# What the tests of ``dgxmm lab replay`` write as its fleet file: chat, asleep from noon on
# Mondays, in UTC as their requests are written.
COMMAND_FLEET = lab_fleet(
    lab_deployment(
        memory_gib_awake=72.0,
        memory_gib_asleep_2=2.0,
        time_zone="UTC",
        schedules=(
            LabSchedule(action=ScheduleAction.SLEEP, days=1, time="12:00", time_zone="UTC"),
        ),
    )
)


def azure(path: Path, model: str) -> Trace:
    """Read one of the real Azure files as ``model``'s trace (skip, or fail in CI, if absent)."""
    need(path.exists(), f"the Azure trace is not at {AZURE_DIR} (../shared/data from the root)")
    return read_azure_trace(path, model)
