"""Checks of a job definition's keys, shared by the store and the browser playground.

Both read the same keys (``name``, ``schedule``, ``enabled``, ``timeout_ms``, ...) and answer
every wrong field at once: ``Refusals`` runs each check, keeps each ``DefinitionError``, and
raises the first with ``errors`` listing them all. Here, in the engine's layer, because the
playground runs in the browser, where the store (SQLAlchemy) cannot be imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from dgxmm.errors import CronError, DefinitionError, ZoneError
from dgxmm.jobs.catchup import CatchUp, Coalesce
from dgxmm.jobs.cron.expression import CronSchedule
from dgxmm.jobs.cron.zones import resolve_zone
from dgxmm.jobs.job import RetryPolicy
from dgxmm.jobs.overlap import Overlap

__all__ = [
    "CATCHUP_WINDOW_DEFAULT_S",
    "CATCHUP_WINDOW_MAX_S",
    "PAUSE_NOTE_MAX",
    "RETRIES_MAX",
    "RETRY_WAIT_MAX_S",
    "Refusals",
    "check_catch_up",
    "check_enabled",
    "check_name",
    "check_overlap",
    "check_pause_note",
    "check_positive",
    "check_retry",
    "check_schedule",
    "check_time_zone",
]

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
PAUSE_NOTE_MAX = 500  # a line or two on a job list, not a document
_T = TypeVar("_T")


class Refusals:
    """The wrong fields of one definition, gathered check by check."""

    def __init__(self) -> None:
        self.found: list[DefinitionError] = []

    def check(self, check: Callable[[], _T]) -> _T | None:
        """Return what ``check`` returns, or None when it refused (the refusal is kept)."""
        try:
            return check()
        except DefinitionError as error:
            self.found.append(error)
            return None

    def raise_any(self) -> None:
        """Raise the first refusal, its ``errors`` naming every wrong field; else nothing."""
        if self.found:
            first = self.found[0]
            first.errors = tuple((error.field, error.message) for error in self.found)
            raise first


def check_name(value: object, *, field: str = "name", kind: str = "job") -> str:
    """Check the name of a job or saved query."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise DefinitionError(
            field,
            f"{value!r} is not a {kind} name (1-100 letters, digits, '_', '.', '-'; "
            "not starting with '.' or '-')",
        )
    return value


def check_schedule(
    keys: Mapping[str, Any], *, refusal: type[DefinitionError] = DefinitionError
) -> CronSchedule:
    """Read ``schedule``; a text that does not parse raises ``refusal`` with cron's message."""
    text = keys.get("schedule")
    if not isinstance(text, str):
        raise DefinitionError("schedule", "a job needs a 5-field cron schedule, as text")
    try:
        return CronSchedule.parse(text)
    except CronError as error:
        raise refusal("schedule", error.message) from None


def check_enabled(keys: Mapping[str, Any]) -> bool:
    """Read ``enabled`` (on when left out)."""
    enabled = keys.get("enabled", True)
    if not isinstance(enabled, bool):
        raise DefinitionError("enabled", f"expected true or false, got {enabled!r}")
    return enabled


def check_positive(keys: Mapping[str, Any], key: str, most: int, meaning: str) -> int | None:
    """Read a positive whole number of at most ``most`` (None when left out)."""
    value = keys.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise DefinitionError(key, f"expected a positive whole number, got {value!r}")
    if value > most:
        raise DefinitionError(
            key, f"{value} is more than {most} ({meaning}); leave it out for no limit"
        )
    return value


def check_time_zone(
    keys: Mapping[str, Any], *, refusal: type[DefinitionError] = DefinitionError
) -> ZoneInfo | None:
    """Read ``time_zone``, an IANA name (None when left out: the scheduler's zone).

    A name this machine's zone data does not know raises ``refusal``: a catalog written where
    the data is newer keeps such a job, not run, rather than losing it.
    """
    name = keys.get("time_zone")
    if name is None:
        return None
    if not isinstance(name, str) or len(name) > 100:
        raise DefinitionError("time_zone", f"expected an IANA zone name as text, got {name!r}")
    try:
        return resolve_zone(name, field="time_zone")
    except ZoneError as error:
        raise refusal("time_zone", error.message) from None


def check_pause_note(value: object, *, field: str, enabled: bool = False) -> str | None:
    """Read the note of a job switched off: text of at most ``PAUSE_NOTE_MAX`` characters.

    None or blank is no note. A note with the job on is refused: it says why the job is off,
    and a job switched on again drops it.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise DefinitionError(field, f"expected text, got {value!r}")
    note = value.strip()
    if not note:
        return None
    if enabled:
        raise DefinitionError(field, "a pause note goes with switching a job off (enabled: false)")
    if len(note) > PAUSE_NOTE_MAX:
        raise DefinitionError(field, f"{len(note)} characters; at most {PAUSE_NOTE_MAX}")
    return note


RETRIES_MAX = 20
RETRY_WAIT_MAX_S = 86_400  # a day: a wait longer than that is no retry anyone waits for


def check_retry(keys: Mapping[str, Any], refusals: Refusals) -> RetryPolicy | None:
    """Read ``retries``, ``retry_backoff_s`` and ``retry_backoff_max_s`` (each refusal kept).

    None when one of them was refused. No retries by default; retries need a first wait.
    """
    before = len(refusals.found)
    retries = refusals.check(lambda: _whole(keys, "retries", RETRIES_MAX))
    backoff = refusals.check(lambda: _seconds(keys, "retry_backoff_s"))
    most = refusals.check(lambda: _seconds(keys, "retry_backoff_max_s"))
    if len(refusals.found) > before:
        return None
    count = retries or 0
    if count and backoff is None:
        refusals.found.append(
            DefinitionError("retry_backoff_s", f"{count} retries need a first wait, in seconds")
        )
        return None
    if most is not None and (backoff is None or most < backoff):
        refusals.found.append(
            DefinitionError("retry_backoff_max_s", "must be at least retry_backoff_s")
        )
        return None
    return RetryPolicy(
        retries=count,
        backoff=None if backoff is None else timedelta(seconds=backoff),
        backoff_max=None if most is None else timedelta(seconds=most),
    )


def _whole(keys: Mapping[str, Any], key: str, most: int) -> int | None:
    value = keys.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise DefinitionError(key, f"expected a whole number from 0 to {most}, got {value!r}")
    return value


def _seconds(keys: Mapping[str, Any], key: str) -> float | None:
    value = keys.get(key)
    if value is None:
        return None
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not 0 < value <= RETRY_WAIT_MAX_S  # NaN fails it too
        or timedelta(seconds=value) <= timedelta(0)  # kept to the microsecond, as the window
    ):
        raise DefinitionError(
            key,
            "expected a positive number of seconds (a microsecond at least) of at most "
            f"{RETRY_WAIT_MAX_S}, got {value!r}",
        )
    return float(value)


CATCHUP_WINDOW_DEFAULT_S = 60  # the scheduler's lateness: a coalesce alone keeps that window
CATCHUP_WINDOW_MAX_S = 7 * 86_400  # a week: past it, a catch-up is a replay, not a catch-up


def check_catch_up(keys: Mapping[str, Any], refusals: Refusals) -> CatchUp | None:
    """Read ``catchup_window_s`` and ``coalesce`` (each refusal kept).

    None when both are left out (the spec's rule: a gap is skipped whole) or one was refused.
    Given one, the other defaults: the one-minute lateness, and ``latest``.
    """
    before = len(refusals.found)
    window = refusals.check(lambda: _window(keys))
    coalesce = refusals.check(lambda: _choice(keys, "coalesce", Coalesce))
    if len(refusals.found) > before or (window is None and coalesce is None):
        return None
    return CatchUp(
        window=timedelta(seconds=CATCHUP_WINDOW_DEFAULT_S if window is None else window),
        coalesce=coalesce or Coalesce.LATEST,
    )


def check_overlap(keys: Mapping[str, Any]) -> Overlap:
    """Read ``overlap`` (``skip`` when left out, the spec's rule)."""
    return _choice(keys, "overlap", Overlap) or Overlap.SKIP


_E = TypeVar("_E", Coalesce, Overlap)


def _choice(keys: Mapping[str, Any], key: str, kind: type[_E]) -> _E | None:
    value = keys.get(key)
    if value is None:
        return None
    names = ", ".join(member.value for member in kind)
    if not isinstance(value, str):
        raise DefinitionError(key, f"expected one of {names}, got {value!r}")
    try:
        return kind(value)
    except ValueError:
        raise DefinitionError(key, f"{value!r} is not one of {names}") from None


def _window(keys: Mapping[str, Any]) -> float | None:
    value = keys.get("catchup_window_s")
    if value is None:
        return None
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not 0 < value <= CATCHUP_WINDOW_MAX_S  # NaN fails it too
        # The window is kept to the microsecond: less would be a window of none.
        or timedelta(seconds=value) <= timedelta(0)
    ):
        raise DefinitionError(
            "catchup_window_s",
            "expected a positive number of seconds (a microsecond at least) of at most "
            f"{CATCHUP_WINDOW_MAX_S}, got {value!r}",
        )
    return float(value)
