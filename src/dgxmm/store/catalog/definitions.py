"""User job definitions: the spec's keys, checked.

``define_job`` takes the keys of the spec: ``name``, ``schedule``, ``action``, ``query``,
``args``, ``path``, ``enabled``, ``timeout_ms``, ``memory_limit`` (bytes), ``run_on`` and
``description``, and dgxmm's own ``time_zone`` (the IANA zone its schedule is read in;
left out, the scheduler's), ``pause_note`` (why a job switched off is off), ``retries``,
``retry_backoff_s``, ``retry_backoff_max_s`` (how a failed run is tried again),
``catchup_window_s`` and ``coalesce`` (which times a gap left still run) and ``overlap``
(what a time does that comes while the job runs). The catalog
keeps a definition exactly as written; ``check_job`` reads it into a ``JobSpec`` or raises
``DefinitionError(field, message)`` naming the first wrong key, its ``errors`` listing every
one.

The same check reads stored definitions back. One written by a newer dgxmm (an action or a
``run_on`` this version does not know, a key it does not know, a schedule it cannot parse) is
kept as written and not scheduled; the error's text becomes the reason listed with it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from dgxmm.errors import DefinitionError
from dgxmm.jobs import CatchUp, CronSchedule, JobLimits, Overlap, RetryPolicy
from dgxmm.jobs.keys import (
    Refusals,
    check_catch_up,
    check_enabled,
    check_name,
    check_overlap,
    check_pause_note,
    check_positive,
    check_retry,
    check_schedule,
    check_time_zone,
)
from dgxmm.store.catalog.params import ParamType, check_args

__all__ = [
    "JOB_KEYS",
    "JobAction",
    "JobSpec",
    "RunOn",
    "UnknownToThisVersion",
    "check_job",
    "check_name",
    "resolve_backup_path",
]

JOB_KEYS = (
    "name",
    "schedule",
    "action",
    "query",
    "args",
    "path",
    "enabled",
    "timeout_ms",
    "memory_limit",
    "run_on",
    "description",
    "time_zone",
    "pause_note",
    "retries",
    "retry_backoff_s",
    "retry_backoff_max_s",
    "catchup_window_s",
    "coalesce",
    "overlap",
)
_DESCRIPTION_MAX = 2000
# The largest limits a run can hold: a timeout past a year is no limit anyone means (and a
# timedelta of 10^17 ms does not exist); memory is counted in a 64-bit integer.
TIMEOUT_MS_MAX = 365 * 24 * 3600 * 1000
MEMORY_LIMIT_MAX = 2**63 - 1
_E = TypeVar("_E", bound=Enum)


class UnknownToThisVersion(DefinitionError):
    """A definition this version cannot read (perhaps written by a newer one): kept, not run."""


class JobAction(Enum):
    """What a run of a user job does."""

    QUERY = "query"  # calls a saved query with fixed arguments
    CHECKPOINT = "checkpoint"  # writes a checkpoint of the store
    BACKUP = "backup"  # backs the store up into a directory


class RunOn(Enum):
    """Which instance runs a job."""

    PRIMARY = "primary"  # the instance that ticks (the only one, on a single instance)
    REPLICA = "replica"  # a read replica; a single instance has none


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSpec:
    """A checked job definition of an action this version knows."""

    name: str
    schedule: CronSchedule
    action: JobAction
    query: str | None = None
    args: dict[str, object] = field(default_factory=dict)
    path: Path | None = None  # a backup's directory, absolute
    enabled: bool = True
    limits: JobLimits = field(default_factory=JobLimits)
    run_on: RunOn = RunOn.PRIMARY
    description: str | None = None
    time_zone: ZoneInfo | None = None  # None: the scheduler's zone
    pause_note: str | None = None  # why it is switched off; only while it is
    retry: RetryPolicy = field(default_factory=RetryPolicy)  # none by default
    catch_up: CatchUp | None = None  # None: the spec's rule, a gap skipped whole
    overlap: Overlap = Overlap.SKIP


ParamsOf = Callable[[str], "Mapping[str, ParamType] | None"]


def check_job(
    keys: Mapping[str, Any],
    *,
    params_of: ParamsOf | None,
    base_dir: Path,
    reserved: Collection[str] = (),
) -> JobSpec:
    """Check a definition; ``params_of`` None skips the query and its arguments (stored ones).

    Every key is checked, so the error raised lists all wrong fields in ``errors``; it is the
    first one found (its class decides whether a stored definition is kept, not run).
    """
    if not isinstance(keys, Mapping):
        raise DefinitionError("definition", "expected an object of job keys")
    refusals = Refusals()
    checked = refusals.check
    name = checked(lambda: _name(keys, reserved))
    action = checked(lambda: _enum(keys, "action", JobAction, required=True, what="an action"))
    checked(lambda: _known_keys(keys))
    schedule = checked(lambda: check_schedule(keys, refusal=UnknownToThisVersion))
    run_on = checked(lambda: _enum(keys, "run_on", RunOn, required=False, what="a run_on"))
    enabled = checked(lambda: check_enabled(keys))
    timeout_ms = checked(lambda: check_positive(keys, "timeout_ms", TIMEOUT_MS_MAX, "365 days"))
    memory = checked(
        lambda: check_positive(
            keys, "memory_limit", MEMORY_LIMIT_MAX, "2^63 - 1, the most a 64-bit count holds"
        )
    )
    description = checked(lambda: _description(keys))
    time_zone = checked(lambda: check_time_zone(keys, refusal=UnknownToThisVersion))
    # A wrong ``enabled`` is refused on its own; the note is then read as of a job off.
    pause_note = checked(
        lambda: check_pause_note(
            keys.get("pause_note"), field="pause_note", enabled=enabled is True
        )
    )
    retry = check_retry(keys, refusals)
    catch_up = check_catch_up(keys, refusals)
    overlap = checked(lambda: check_overlap(keys))
    parts = None
    if action is not None:
        known = action
        parts = checked(lambda: _action_keys(keys, known, params_of, base_dir))
    refusals.raise_any()
    # No error: every check gave its value (only run_on, the limits, the description and
    # the zone may be None).
    assert name is not None
    assert action is not None
    assert schedule is not None
    assert enabled is not None
    assert parts is not None
    query, args, path = parts
    return JobSpec(
        name=name,
        schedule=schedule,
        action=action,
        query=query,
        args=args,
        path=path,
        enabled=enabled,
        limits=JobLimits(
            timeout=None if timeout_ms is None else timedelta(milliseconds=timeout_ms),
            memory_bytes=memory,
        ),
        run_on=run_on or RunOn.PRIMARY,
        description=description,
        time_zone=time_zone,
        pause_note=pause_note,
        retry=retry or RetryPolicy(),
        catch_up=catch_up,
        overlap=overlap or Overlap.SKIP,
    )


def _name(keys: Mapping[str, Any], reserved: Collection[str]) -> str:
    name = check_name(keys.get("name"))
    if name in reserved:
        raise DefinitionError("name", f"{name} is a system job's name")
    return name


def _known_keys(keys: Mapping[str, Any]) -> None:
    unknown = [str(key) for key in keys if key not in JOB_KEYS]
    if unknown:
        raise UnknownToThisVersion(
            unknown[0], f"not a job key this version knows (keys: {', '.join(JOB_KEYS)})"
        )


def _description(keys: Mapping[str, Any]) -> str | None:
    description = keys.get("description")
    if description is not None and (
        not isinstance(description, str) or len(description) > _DESCRIPTION_MAX
    ):
        raise DefinitionError("description", f"expected text of at most {_DESCRIPTION_MAX} chars")
    return description


def resolve_backup_path(text: str, base_dir: Path) -> Path:
    """Return a backup directory as an absolute path; a relative one is under ``base_dir``."""
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    return Path(*path.absolute().parts)


def _action_keys(
    keys: Mapping[str, Any], action: JobAction, params_of: ParamsOf | None, base_dir: Path
) -> tuple[str | None, dict[str, object], Path | None]:
    if action is not JobAction.QUERY:
        for key in ("query", "args"):
            if key in keys:
                raise DefinitionError(key, f"only a query job has {key!r} ({action.value} has not)")
    if action is not JobAction.BACKUP and "path" in keys:
        raise DefinitionError("path", f"only a backup job has a path ({action.value} has not)")
    if action is JobAction.QUERY:
        query = check_name(keys.get("query"), field="query", kind="saved query")
        args = keys.get("args", {})
        if params_of is None:
            if not isinstance(args, Mapping):
                raise DefinitionError("args", "expected an object of {parameter: value}")
            return query, dict(args), None
        params = params_of(query)
        if params is None:
            raise DefinitionError("query", f"no saved query named {query!r}")
        return query, check_args(args, params), None
    if action is JobAction.BACKUP:
        text = keys.get("path")
        if not isinstance(text, str) or not text.strip():
            raise DefinitionError("path", "a backup job needs the directory to back up into")
        path = resolve_backup_path(text, base_dir)
        if path.exists() and not path.is_dir():
            raise DefinitionError("path", f"{path} is a file, not a directory")
        return None, {}, path
    return None, {}, None


def _enum(
    keys: Mapping[str, Any], key: str, kind: type[_E], *, required: bool, what: str
) -> _E | None:
    value = keys.get(key)
    if value is None and not required:
        return None
    known = ", ".join(str(member.value) for member in kind)
    if not isinstance(value, str):
        raise DefinitionError(key, f"expected {what} as text (known: {known}), got {value!r}")
    try:
        return kind(value)
    except ValueError:
        raise UnknownToThisVersion(
            key, f"{value!r} is not {what} this version knows (known: {known})"
        ) from None
