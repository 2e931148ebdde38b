"""The overrides of the system jobs' schedules and switches, kept in the database.

One setting per overridden job, ``jobs.override.<name>`` = ``{"schedule": cron text or null,
"enabled": true, false or null, "note": text}`` (null: the built-in one; ``note``, why it was
switched off, only while it has one; no setting: no override). Being
settings, they are shared by every instance on the database, journaled, and each change moves
the catalog version, so the instance that ticks applies them at its next tick
(``Store.sync`` reloads them and calls ``Scheduler.refresh_overrides``). Overrides an older
dgxmm kept in the workload sidecar move here when the store opens (``adopt``).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from sqlalchemy import Engine, select

from dgxmm.clock import Clock
from dgxmm.errors import CronError, InvalidInput
from dgxmm.jobs import KEEP, CronSchedule, Keep, Override, WorkloadStats
from dgxmm.jobs.keys import check_pause_note
from dgxmm.jobs.stats.overrides import overridden
from dgxmm.store.catalog.journal import read_setting, write_setting
from dgxmm.store.database import CHANGE_BUSY_MS, reading, writing
from dgxmm.store.schema import settings

__all__ = ["OVERRIDE_PREFIX", "SystemJobOverrides"]

OVERRIDE_PREFIX = "jobs.override."

log = logging.getLogger(__name__)


class SystemJobOverrides:
    """The database's overrides, as last loaded, and the way to change them."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock
        self._lock = threading.Lock()
        self._known: dict[str, Override] = {}

    def load(self) -> None:
        """Read every override again (one query)."""
        with reading(self._engine) as connection:
            rows = connection.execute(
                select(settings.c.key, settings.c.value).where(
                    settings.c.key.startswith(OVERRIDE_PREFIX, autoescape=True)
                )
            ).all()
        known = {}
        for key, text in rows:
            name = key.removeprefix(OVERRIDE_PREFIX)
            override = _parse(_json(text))
            if override is None:
                log.warning("setting %s is not an override; the built-in job is kept", key)
            else:
                known[name] = override
        with self._lock:
            self._known = known

    def job_override(self, name: str) -> Override | None:
        """Return a job's override as last loaded or set here."""
        with self._lock:
            return self._known.get(name)

    def set_job_override(
        self,
        name: str,
        *,
        schedule: str | Keep | None = KEEP,
        enabled: bool | Keep | None = KEEP,
        note: str | Keep | None = KEEP,
    ) -> None:
        """Change a job's overridden schedule, switch and/or note; None restores the built-in one.

        ``InvalidInput`` naming the field, and nothing written, for a schedule that is not
        cron text or a switch that is not true or false: written, the scheduler would keep
        the built-in schedule without a word (the spec's call "in your own program" reaches
        here, with no API before it to refuse).
        """
        _check(schedule, enabled)
        if note is not KEEP and note is not None:
            check_pause_note(note, field="note")
        key = OVERRIDE_PREFIX + name
        with writing(self._engine, busy_ms=CHANGE_BUSY_MS) as connection:
            _, value = read_setting(connection, key)  # read where it is written: no lost change
            current = _parse(value) or Override()
            new = overridden(current, schedule, enabled, note)
            empty = new == Override()
            write_setting(
                connection,
                key=key,
                value=None if empty else _value(new),
                actor=None,
                at_us=self._clock.now_us(),
            )
        with self._lock:
            if empty:
                self._known.pop(name, None)
            else:
                self._known[name] = new

    def adopt(self, stats: WorkloadStats) -> bool:
        """Move the overrides a sidecar holds into the database; tell whether there were any.

        A job that has an override in the database already keeps it (another instance moved
        or set it first); the sidecar's is dropped either way.
        """
        found = stats.job_overrides()
        for name, override in found.items():
            key = OVERRIDE_PREFIX + name
            with writing(self._engine, busy_ms=CHANGE_BUSY_MS) as connection:
                there, _ = read_setting(connection, key)
                if not there:
                    write_setting(
                        connection,
                        key=key,
                        value=_value(override),
                        actor=None,
                        at_us=self._clock.now_us(),
                    )
            if there:
                log.warning("sidecar override of %s dropped: the database has its own", name)
            stats.set_job_override(name, schedule=None, enabled=None, note=None)
        return bool(found)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _value(override: Override) -> dict[str, Any]:
    """The setting's value of an override (``note`` only when there is one, as before it)."""
    value: dict[str, Any] = {"schedule": override.schedule, "enabled": override.enabled}
    if override.note is not None:
        value["note"] = override.note
    return value


def _parse(value: Any) -> Override | None:
    """The override a setting's value holds, or None when it holds none."""
    if not isinstance(value, dict):
        return None
    schedule, enabled, note = value.get("schedule"), value.get("enabled"), value.get("note")
    if schedule is not None and not isinstance(schedule, str):
        return None
    if enabled is not None and not isinstance(enabled, bool):
        return None
    if note is not None and not isinstance(note, str):
        note = None  # a note is never worth losing the switch over
    return Override(schedule=schedule, enabled=enabled, note=note)


def _check(schedule: object, enabled: object) -> None:
    if schedule is not KEEP and schedule is not None:
        if not isinstance(schedule, str):
            raise InvalidInput("schedule", f"{schedule!r} is not cron text (or None)")
        try:
            CronSchedule.parse(schedule)
        except CronError as error:
            raise InvalidInput("schedule", str(error)) from error
    if enabled is not KEEP and enabled is not None and not isinstance(enabled, bool):
        raise InvalidInput("enabled", f"{enabled!r} is not true or false (or None)")
