"""The evaluator: each rule's findings grouped into incidents, and the messages they make.

One incident per rule and subject while its condition holds (``alert_incidents.open_key``
is unique, so two instances evaluating at once still open one). Its first finding sends a
``firing`` message. A new occurrence (the finding's token changed) within the quiet period
is counted, not sent; when the quiet period since the last message has passed and there
are occurrences not yet told, one ``summary`` message says how many. When the condition no
longer holds, a ``resolved`` message says so (and how many repeats were not yet told), and
the incident closes. A rule switched off, or with no channel, makes no message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, insert, select, update

from dgxmm.alerts.conditions import Finding
from dgxmm.alerts.messages import MessageKind, post_message
from dgxmm.alerts.rules import Rule, Rules
from dgxmm.alerts.tables import alert_incidents
from dgxmm.errors import DgxmmError
from dgxmm.store import reading, writing
from dgxmm.time_units import MINUTE_US
from dgxmm.words import counted

__all__ = ["Evaluator", "Finder"]

log = logging.getLogger(__name__)


class Finder(Protocol):
    """What the evaluator asks: the subjects a rule's condition holds for now."""

    def find(self, rule: Rule, now_us: int) -> dict[str, Finding]:
        """Return the findings of ``rule`` at ``now_us``, by subject."""
        ...


class Evaluator:
    """Turns findings into incidents and messages, rule by rule."""

    def __init__(
        self,
        engine: Engine,
        rules: Rules,
        conditions: Finder,
        *,
        shown: Callable[[str], str] = lambda text: text,
    ) -> None:
        self._engine = engine
        # What a message may say of dgxmm's words: it leaves dgxmm, so it reads them as a
        # viewer would (no model server's log tail, key-like words masked; serve passes the
        # server's redaction).
        self._shown = shown
        self._rules = rules
        self._conditions = conditions

    def evaluate(self, now_us: int) -> int:
        """Evaluate every enabled rule at ``now_us``; return the messages made."""
        made = 0
        for rule in self._rules.list():
            if not rule.enabled or not rule.channel_ids:
                continue
            try:
                findings = self._conditions.find(rule, now_us)
                made += self._group(rule, findings, now_us)
            except DgxmmError as error:
                # Another instance opened the same incident first (the unique open key), or
                # the database is away: this rule is evaluated again at the next pulse.
                log.warning("dgxmm alerts: rule %s not evaluated: %s", rule.name, error)
        return made

    def _group(self, rule: Rule, findings: dict[str, Finding], now_us: int) -> int:
        quiet_us = rule.quiet_minutes * MINUTE_US
        with reading(self._engine) as connection:
            open_rows = {
                row.subject: row
                for row in connection.execute(
                    select(alert_incidents).where(
                        alert_incidents.c.rule_id == rule.id,
                        alert_incidents.c.resolved_at.is_(None),
                    )
                )
            }
        made = 0
        for subject, finding in sorted(findings.items()):
            row = open_rows.get(subject)
            with writing(self._engine) as connection:
                if row is None:
                    made += self._open(connection, rule, finding, now_us)
                else:
                    made += self._again(
                        connection, rule, row, finding=finding, now_us=now_us, quiet_us=quiet_us
                    )
        for subject, row in sorted(open_rows.items()):
            if subject not in findings:
                with writing(self._engine) as connection:
                    made += self._resolve(connection, rule, row, now_us)
        return made

    def _open(self, connection: Connection, rule: Rule, finding: Finding, now_us: int) -> int:
        connection.execute(
            insert(alert_incidents).values(
                rule_id=rule.id,
                subject=finding.subject,
                open_key=f"{rule.id}:{finding.subject}",
                title=finding.title,
                last_token=finding.token[:200],
                occurrences=1,
                reported=1,
                opened_at=now_us,
                last_seen_at=now_us,
                last_sent_at=now_us,
            )
        )
        self._post(
            connection,
            rule,
            MessageKind.FIRING,
            subject=finding.subject,
            title=finding.title,
            text=f"{rule.name}: {finding.title}",
            occurrences=1,
            now_us=now_us,
        )
        return 1

    def _again(
        self,
        connection: Connection,
        rule: Rule,
        row: Any,
        *,
        finding: Finding,
        now_us: int,
        quiet_us: int,
    ) -> int:
        occurrences = int(row.occurrences)
        if finding.token[:200] != row.last_token:
            occurrences += 1
        values: dict[str, Any] = {
            "title": finding.title,
            "last_token": finding.token[:200],
            "occurrences": occurrences,
            "last_seen_at": now_us,
        }
        untold = occurrences - int(row.reported)
        summary = untold > 0 and now_us - int(row.last_sent_at) >= quiet_us
        if summary:
            values.update(reported=occurrences, last_sent_at=now_us)
        # Conditional on what was read: of two instances evaluating at once, one counts.
        changed = connection.execute(
            update(alert_incidents)
            .where(
                alert_incidents.c.id == row.id,
                alert_incidents.c.occurrences == row.occurrences,
                alert_incidents.c.last_sent_at == row.last_sent_at,
                alert_incidents.c.resolved_at.is_(None),
            )
            .values(**values)
        ).rowcount
        if changed != 1 or not summary:
            return 0
        text = (
            f"{rule.name}: happened {counted(untold, 'more time')} since the last message "
            f"({occurrences} in all since it began); the latest: {finding.title}"
        )
        self._post(
            connection,
            rule,
            MessageKind.SUMMARY,
            subject=finding.subject,
            title=finding.title,
            text=text,
            occurrences=occurrences,
            now_us=now_us,
        )
        return 1

    def _resolve(self, connection: Connection, rule: Rule, row: Any, now_us: int) -> int:
        changed = connection.execute(
            update(alert_incidents)
            .where(alert_incidents.c.id == row.id, alert_incidents.c.resolved_at.is_(None))
            .values(resolved_at=now_us, open_key=None)
        ).rowcount
        if changed != 1:
            return 0  # another instance resolved it first
        untold = int(row.occurrences) - int(row.reported)
        repeats = f"; {counted(untold, 'repeat')} since the last message" if untold > 0 else ""
        text = f"{rule.name}: resolved, no longer holds: {row.title}{repeats}"
        self._post(
            connection,
            rule,
            MessageKind.RESOLVED,
            subject=row.subject,
            title=row.title,
            text=text,
            occurrences=int(row.occurrences),
            now_us=now_us,
        )
        return 1

    def _post(
        self,
        connection: Connection,
        rule: Rule,
        kind: MessageKind,
        *,
        subject: str,
        title: str,
        text: str,
        occurrences: int,
        now_us: int,
    ) -> None:
        post_message(
            connection,
            kind=kind,
            title=self._shown(title),
            text=self._shown(text),
            channel_ids=rule.channel_ids,
            at_us=now_us,
            rule=rule.name,
            condition=rule.condition.value,
            subject=subject,
            occurrences=occurrences,
        )
