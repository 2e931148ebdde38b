"""Rules: a condition to watch, its numbers, its quiet period, and the channels it tells.

A rule is made by an admin (audited) from ``{name, condition, channels, threshold?,
window_minutes?, quiet_minutes?, enabled?}``; every wrong field is named at once and nothing
is written. A condition takes only the numbers it uses (``Condition.takes``).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any

from sqlalchemy import Connection, Engine, Row, delete, insert, select, update

from dgxmm.alerts.checks import Refusals, check_known_keys, check_name, check_whole
from dgxmm.alerts.tables import alert_channels, alert_incidents, alert_rule_channels, alert_rules
from dgxmm.clock import Clock
from dgxmm.errors import Conflict, DefinitionError, NotFound
from dgxmm.fleet import Audit, AuditAction, AuditSubject
from dgxmm.store import reading, writing

__all__ = ["Condition", "Rule", "Rules"]

RULE_KEYS = frozenset(
    {"name", "condition", "channels", "threshold", "window_minutes", "quiet_minutes", "enabled"}
)
DEFAULT_QUIET_MINUTES = 60
MAX_MINUTES = 7 * 24 * 60
MAX_THRESHOLD = 1_000_000


class Condition(StrEnum):
    """What a rule watches (docs/alerts.md says where each is read from)."""

    JOB_FAILED = "job_failed"  # a job's latest run failed
    JOB_OVER_TIME = "job_over_time"  # a job's latest run went past its timeout
    JOB_SKIPPED = "job_skipped"  # a job's times were skipped ``threshold`` times in a row
    JOB_LATE = "job_late"  # a job's latest run started ``window_minutes`` after its time
    SCHEDULE_PAUSED = "schedule_paused"  # a scheduled action failed; its schedule paused
    DEPLOYMENT_FAILED = "deployment_failed"
    CRITICAL_INSIGHT = "critical_insight"
    PROXY_REFUSED = "proxy_refused"  # over ``threshold`` refusals in ``window_minutes``
    INSTANCE_LOST = "instance_lost"  # an instance died (the lease taken over if it ticked)

    @property
    def takes(self) -> dict[str, int]:
        """Return the numbers this condition uses, with their defaults."""
        return _TAKES.get(self, {})


_TAKES: dict[Condition, dict[str, int]] = {
    Condition.JOB_SKIPPED: {"threshold": 3},
    Condition.JOB_LATE: {"window_minutes": 5},
    Condition.PROXY_REFUSED: {"threshold": 10, "window_minutes": 5},
    # How long a lost instance stays news: after it, its incident resolves.
    Condition.INSTANCE_LOST: {"window_minutes": 60},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One rule with the ids and names of its channels."""

    id: int
    name: str
    condition: Condition
    threshold: int | None
    window_minutes: int | None
    quiet_minutes: int
    enabled: bool
    channel_ids: tuple[int, ...]
    channels: tuple[str, ...]
    created_at: int
    created_by: str

    def to_json(self) -> dict[str, Any]:
        """Return the rule as JSON values."""
        return {
            "id": self.id,
            "name": self.name,
            "condition": self.condition.value,
            "threshold": self.threshold,
            "window_minutes": self.window_minutes,
            "quiet_minutes": self.quiet_minutes,
            "enabled": self.enabled,
            "channels": list(self.channels),
            "created_at_us": self.created_at,
            "created_by": self.created_by,
        }


class Rules:
    """Makes, lists and removes rules."""

    def __init__(self, engine: Engine, clock: Clock, audit: Audit) -> None:
        self._engine = engine
        self._clock = clock
        self._audit = audit

    def create(self, keys: dict[str, Any], *, actor: str) -> Rule:
        """Make a rule; every wrong field is named (``DefinitionError.errors``)."""
        refusals = Refusals()
        refusals.check(lambda: check_known_keys(keys, RULE_KEYS))
        name = refusals.check(lambda: check_name(keys.get("name"), kind="rule"))
        condition = refusals.check(lambda: _check_condition(keys.get("condition")))
        numbers: dict[str, int | None] = {"threshold": None, "window_minutes": None}
        if condition is not None:
            for number in numbers:
                numbers[number] = refusals.check(partial(_check_number, keys, number, condition))
        quiet = refusals.check(
            lambda: check_whole(
                keys.get("quiet_minutes", DEFAULT_QUIET_MINUTES),
                field="quiet_minutes",
                least=0,
                most=MAX_MINUTES,
            )
        )
        enabled = keys.get("enabled", True)
        if not isinstance(enabled, bool):
            refusals.found.append(DefinitionError("enabled", f"{enabled!r} is not true or false"))
        with writing(self._engine) as connection:
            channel_ids = refusals.check(lambda: _channel_ids(connection, keys.get("channels")))
            refusals.raise_any()
            assert name is not None
            assert condition is not None
            assert channel_ids is not None
            assert quiet is not None
            taken = connection.execute(
                select(alert_rules.c.id).where(alert_rules.c.name == name)
            ).first()
            if taken is not None:
                raise Conflict(f"a rule named {name!r} exists", field="name")
            key = connection.execute(
                insert(alert_rules).values(
                    name=name,
                    condition=condition.value,
                    threshold=numbers["threshold"],
                    window_minutes=numbers["window_minutes"],
                    quiet_minutes=quiet,
                    enabled=enabled,
                    created_at=self._clock.now_us(),
                    created_by=actor,
                )
            ).inserted_primary_key
            assert key is not None
            rule_id = int(key[0])
            for channel_id in channel_ids:
                connection.execute(
                    insert(alert_rule_channels).values(rule_id=rule_id, channel_id=channel_id)
                )
            rule = self._get(connection, rule_id)
            self._audit.record(
                actor=actor,
                action=AuditAction.ALERT_RULE_CREATE,
                subject=AuditSubject.ALERT_RULE,
                subject_id=rule_id,
                detail=rule.to_json(),
                connection=connection,
            )
            return rule

    def switch(self, rule_id: int, enabled: object, *, actor: str) -> Rule:
        """Switch a rule on or off (audited). Off, its open incidents close without a word:
        switched on again, a condition that still holds is news again."""
        if not isinstance(enabled, bool):
            raise DefinitionError("enabled", f"{enabled!r} is not true or false")
        with writing(self._engine) as connection:
            rule = self._get(connection, rule_id)
            if rule.enabled is enabled:
                return rule
            connection.execute(
                update(alert_rules).where(alert_rules.c.id == rule_id).values(enabled=enabled)
            )
            if not enabled:
                connection.execute(
                    update(alert_incidents)
                    .where(
                        alert_incidents.c.rule_id == rule_id,
                        alert_incidents.c.resolved_at.is_(None),
                    )
                    .values(resolved_at=self._clock.now_us(), open_key=None)
                )
            self._audit.record(
                actor=actor,
                action=AuditAction.ALERT_RULE_SWITCH,
                subject=AuditSubject.ALERT_RULE,
                subject_id=rule_id,
                detail={"name": rule.name, "enabled": enabled},
                connection=connection,
            )
            return self._get(connection, rule_id)

    def remove(self, rule_id: int, *, actor: str) -> None:
        """Remove a rule and its incidents (audited); messages already made are kept."""
        with writing(self._engine) as connection:
            rule = self._get(connection, rule_id)
            connection.execute(delete(alert_rules).where(alert_rules.c.id == rule_id))
            self._audit.record(
                actor=actor,
                action=AuditAction.ALERT_RULE_REMOVE,
                subject=AuditSubject.ALERT_RULE,
                subject_id=rule_id,
                detail={"name": rule.name},
                connection=connection,
            )

    def get(self, rule_id: int) -> Rule:
        """Return one rule (``NotFound``)."""
        with reading(self._engine) as connection:
            return self._get(connection, rule_id)

    def list(self, connection: Connection | None = None) -> builtins.list[Rule]:
        """Return every rule, by name."""
        if connection is None:
            with reading(self._engine) as owned:
                return self._all(owned)
        return self._all(connection)

    def _all(self, connection: Connection) -> builtins.list[Rule]:
        rows = connection.execute(select(alert_rules).order_by(alert_rules.c.name)).all()
        links = connection.execute(
            select(alert_rule_channels.c.rule_id, alert_channels.c.id, alert_channels.c.name)
            .join(alert_channels, alert_channels.c.id == alert_rule_channels.c.channel_id)
            .order_by(alert_channels.c.name)
        ).all()
        return [
            _rule(row, [(int(link.id), link.name) for link in links if link.rule_id == row.id])
            for row in rows
        ]

    def _get(self, connection: Connection, rule_id: int) -> Rule:
        for rule in self._all(connection):
            if rule.id == rule_id:
                return rule
        raise NotFound("rule", rule_id)


def _rule(row: Row[Any], channels: builtins.list[tuple[int, str]]) -> Rule:
    return Rule(
        id=int(row.id),
        name=row.name,
        condition=Condition(row.condition),
        threshold=row.threshold,
        window_minutes=row.window_minutes,
        quiet_minutes=int(row.quiet_minutes),
        enabled=bool(row.enabled),
        channel_ids=tuple(c for c, _ in channels),
        channels=tuple(n for _, n in channels),
        created_at=int(row.created_at),
        created_by=row.created_by,
    )


def _check_condition(value: object) -> Condition:
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return Condition(value)
    except ValueError:
        allowed = ", ".join(c.value for c in Condition)
        raise DefinitionError("condition", f"{value!r} is not one of {allowed}") from None


def _check_number(keys: dict[str, Any], key: str, condition: Condition) -> int | None:
    default = condition.takes.get(key)
    if default is None:
        if keys.get(key) is not None:
            raise DefinitionError(key, f"{condition.value} takes no {key}")
        return None
    most = MAX_MINUTES if key == "window_minutes" else MAX_THRESHOLD
    return check_whole(keys.get(key, default), field=key, least=1, most=most)


def _channel_ids(connection: Connection, value: object) -> builtins.list[int]:
    if not isinstance(value, list) or not value or len(value) > 20:
        raise DefinitionError("channels", "a list of 1-20 channel names (dgxmm alerts channels)")
    found: builtins.list[int] = []
    for given in value:
        if isinstance(given, bool) or not (
            isinstance(given, str) or (isinstance(given, int) and 1 <= given < 2**63)
        ):
            raise DefinitionError("channels", f"{given!r} is not a channel's name or id")
        column = alert_channels.c.id if isinstance(given, int) else alert_channels.c.name
        row = connection.execute(select(alert_channels.c.id).where(column == given)).first()
        if row is None:
            raise DefinitionError("channels", f"no channel named {given!r}")
        found.append(int(row.id))
    return sorted(set(found))
