"""Notification channels: webhooks, each with its body format, its URL and secret sealed.

A channel is made by an admin (audited). Its secret is made here, returned once by
``create`` (and by ``new_secret``) and kept only sealed: no read of a channel returns it, nor
its URL past the host (a Slack or Teams URL is a credential in itself). A URL is refused
unless it is http or https with a host, and without a user or password in it, and unless
its host is an address allowed (``destinations.py``).
"""

from __future__ import annotations

import builtins
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlalchemy import Connection, Engine, Row, delete, insert, select, update

from dgxmm.alerts.checks import Refusals, check_known_keys, check_name
from dgxmm.alerts.destinations import Destinations
from dgxmm.alerts.sealing import Sealer, Unsealable
from dgxmm.alerts.tables import alert_channels
from dgxmm.clock import Clock
from dgxmm.errors import Conflict, DefinitionError, NotFound
from dgxmm.fleet import Audit, AuditAction, AuditSubject
from dgxmm.store import reading, writing

__all__ = ["BodyFormat", "Channel", "Channels", "check_url", "shown_url"]

MAX_URL = 2000
CHANNEL_KEYS = frozenset({"name", "url", "format"})


class BodyFormat(StrEnum):
    """The JSON a channel's webhook is sent."""

    GENERIC = "generic"  # dgxmm's own fields (docs/alerts.md)
    SLACK = "slack"  # {"text": ...}: Slack's incoming webhooks, Mattermost, Rocket.Chat
    TEAMS = "teams"  # an Adaptive Card message: Microsoft Teams' workflow webhooks


@dataclass(frozen=True, slots=True, kw_only=True)
class Channel:
    """One channel as anyone may see it: neither its secret nor its whole URL."""

    id: int
    name: str
    body_format: BodyFormat
    url_shown: str
    failures: int  # failed attempts in a row
    created_at: int
    created_by: str
    updated_at: int

    def to_json(self) -> dict[str, Any]:
        """Return the channel as JSON values."""
        return {
            "id": self.id,
            "name": self.name,
            "kind": "webhook",
            "format": self.body_format.value,
            "url": self.url_shown,
            "failures": self.failures,
            "created_at_us": self.created_at,
            "created_by": self.created_by,
            "updated_at_us": self.updated_at,
        }

    @classmethod
    def from_row(cls, row: Row[Any]) -> Channel:
        """Read an ``alert_channels`` row (its sealed columns stay behind)."""
        return cls(
            id=int(row.id),
            name=row.name,
            body_format=BodyFormat(row.body_format),
            url_shown=row.url_shown,
            failures=int(row.failures),
            created_at=int(row.created_at),
            created_by=row.created_by,
            updated_at=int(row.updated_at),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """Where and how to send one channel's messages: for the sender's eyes only."""

    channel: Channel
    url: str
    secret: str

    def __repr__(self) -> str:  # never the URL or the secret, in a log or a traceback
        return f"Target(channel={self.channel.name!r})"


def check_url(value: object, *, destinations: Destinations, field: str = "url") -> str:
    """Check a webhook URL: http or https, a host, no credentials in it, an address allowed."""
    if not isinstance(value, str) or not value.strip():
        raise DefinitionError(field, "a webhook needs a URL (http:// or https://)")
    url = value.strip()
    if len(url) > MAX_URL:
        raise DefinitionError(field, f"a URL of at most {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises here
    except ValueError as error:
        raise DefinitionError(field, f"not a URL ({error})") from None
    if parts.scheme.lower() not in ("http", "https"):
        scheme = parts.scheme or "(none)"
        raise DefinitionError(field, f"scheme {scheme!r} refused: only http and https")
    if not parts.hostname:
        raise DefinitionError(field, "a URL with a host")
    if parts.username is not None or parts.password is not None:
        raise DefinitionError(field, "no user or password in the URL: messages are signed")
    try:
        host = httpx.URL(url).host  # what the sender will make of it
    except httpx.InvalidURL as error:
        raise DefinitionError(field, f"not a URL httpx can send to ({error})") from None
    destinations.check_host(host, field)
    return url


def shown_url(url: str) -> str:
    """Return what may be shown of a URL: its scheme, host and port, then ``/…``."""
    parts = urlsplit(url)
    shown = f"{parts.scheme.lower()}://{parts.netloc}"
    return shown + "/…" if parts.path not in ("", "/") or parts.query else shown


def _new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class Channels:
    """Makes, lists, removes channels; hands the sender their targets."""

    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        sealer: Sealer,
        audit: Audit,
        *,
        destinations: Destinations,
        on_removed: Callable[[int], None] = lambda channel_id: None,
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._sealer = sealer
        self._audit = audit
        self._destinations = destinations
        self._on_removed = on_removed
        # Held while a value is sealed and written, and through a key's rotation: no value
        # sealed under the key going out is written after the rotation sealed everything again.
        self._sealing = threading.Lock()  # the sender's lane stops, its attempt under way too

    def create(self, keys: dict[str, Any], *, actor: str) -> tuple[Channel, str]:
        """Make a channel from ``{name, url, format?}``; return it and its secret (shown once).

        Every wrong field is named (``DefinitionError.errors``); nothing is written then.
        """
        refusals = Refusals()
        refusals.check(lambda: check_known_keys(keys, CHANNEL_KEYS))
        name = refusals.check(lambda: check_name(keys.get("name"), kind="channel"))
        url = refusals.check(lambda: check_url(keys.get("url"), destinations=self._destinations))
        body_format = refusals.check(lambda: _check_format(keys.get("format", "generic")))
        refusals.raise_any()
        assert name is not None
        assert url is not None
        assert body_format is not None
        secret = _new_secret()
        now = self._clock.now_us()
        with self._sealing, writing(self._engine) as connection:
            if self._find(connection, name) is not None:
                raise Conflict(f"a channel named {name!r} exists", field="name")
            key = connection.execute(
                insert(alert_channels).values(
                    name=name,
                    body_format=body_format.value,
                    url_sealed=self._sealer.seal(url),
                    url_shown=shown_url(url),
                    secret_sealed=self._sealer.seal(secret),
                    failures=0,
                    created_at=now,
                    created_by=actor,
                    updated_at=now,
                )
            ).inserted_primary_key
            assert key is not None
            channel = self._get(connection, int(key[0]))
            self._audit.record(
                actor=actor,
                action=AuditAction.ALERT_CHANNEL_CREATE,
                subject=AuditSubject.ALERT_CHANNEL,
                subject_id=channel.id,
                detail={"name": name, "format": body_format.value, "url": channel.url_shown},
                connection=connection,
            )
        return channel, secret

    def new_secret(self, channel_id: int, *, actor: str) -> tuple[Channel, str]:
        """Replace a channel's secret; return the new one (shown once)."""
        secret = _new_secret()
        with self._sealing, writing(self._engine) as connection:
            self._get(connection, channel_id)
            connection.execute(
                update(alert_channels)
                .where(alert_channels.c.id == channel_id)
                .values(secret_sealed=self._sealer.seal(secret), updated_at=self._clock.now_us())
            )
            self._audit.record(
                actor=actor,
                action=AuditAction.ALERT_CHANNEL_SECRET,
                subject=AuditSubject.ALERT_CHANNEL,
                subject_id=channel_id,
                connection=connection,
            )
            return self._get(connection, channel_id), secret

    def remove(self, channel_id: int, *, actor: str) -> None:
        """Remove a channel, its place in rules and its deliveries (audited)."""
        with writing(self._engine) as connection:
            channel = self._get(connection, channel_id)
            connection.execute(delete(alert_channels).where(alert_channels.c.id == channel_id))
            self._audit.record(
                actor=actor,
                action=AuditAction.ALERT_CHANNEL_REMOVE,
                subject=AuditSubject.ALERT_CHANNEL,
                subject_id=channel_id,
                detail={"name": channel.name},
                connection=connection,
            )
        self._on_removed(channel_id)

    def reseal(self) -> int:
        """Seal again under the current key and scheme each value that is not; return how
        many channels changed (at start: an upgrade's old values, a rotation cut short).

        A value no key of this instance opens is left as it is (the sender says so)."""
        c = alert_channels.c
        changed = 0
        with self._sealing, writing(self._engine) as connection:
            for row in connection.execute(select(c.id, c.url_sealed, c.secret_sealed)).all():
                values = {}
                for column in ("url_sealed", "secret_sealed"):
                    sealed = getattr(row, column)
                    try:
                        if not self._sealer.is_current(sealed):
                            values[column] = self._sealer.seal(self._sealer.open(sealed))
                    except Unsealable:
                        continue
                if values:
                    connection.execute(
                        update(alert_channels).where(c.id == row.id).values(**values)
                    )
                    changed += 1
        return changed

    def rotate(self, key: bytes, *, actor: str) -> int:
        """Seal every value again under ``key``, in one transaction, and seal with it from
        now on; return how many channels. Refused whole (``Conflict``) when a value does
        not open here: it would be lost."""
        c = alert_channels.c
        fresh = Sealer(key)
        with self._sealing:
            with writing(self._engine) as connection:
                rows = connection.execute(select(c.id, c.name, c.url_sealed, c.secret_sealed)).all()
                for row in rows:
                    try:
                        url, secret = (self._sealer.open(row.url_sealed),
                                       self._sealer.open(row.secret_sealed))  # fmt: skip
                    except Unsealable:
                        raise Conflict(
                            f"channel {row.name} does not open with this instance's key: "
                            "the key is not rotated (nothing changed)"
                        ) from None
                    connection.execute(
                        update(alert_channels)
                        .where(c.id == row.id)
                        .values(url_sealed=fresh.seal(url), secret_sealed=fresh.seal(secret))
                    )
                self._audit.record(
                    actor=actor,
                    action=AuditAction.ALERT_KEY_ROTATE,
                    subject=AuditSubject.ALERT_CHANNEL,
                    subject_id=None,
                    detail={"channels": len(rows)},
                    connection=connection,
                )
            self._sealer.rotate(key)
        return len(rows)

    def get(self, channel_id: int) -> Channel:
        """Return one channel (``NotFound``)."""
        with reading(self._engine) as connection:
            return self._get(connection, channel_id)

    def list(self) -> builtins.list[Channel]:
        """Return every channel, by name."""
        with reading(self._engine) as connection:
            rows = connection.execute(select(alert_channels).order_by(alert_channels.c.name))
            return [Channel.from_row(row) for row in rows]

    def target(self, connection: Connection, channel_id: int) -> Target:
        """Return a channel's URL and secret, opened (``Unsealable`` with another key)."""
        row = connection.execute(
            select(alert_channels).where(alert_channels.c.id == channel_id)
        ).first()
        if row is None:
            raise NotFound("channel", channel_id)
        return Target(
            channel=Channel.from_row(row),
            url=self._sealer.open(row.url_sealed),
            secret=self._sealer.open(row.secret_sealed),
        )

    def _find(self, connection: Connection, name: str) -> Channel | None:
        row = connection.execute(
            select(alert_channels).where(alert_channels.c.name == name)
        ).first()
        return None if row is None else Channel.from_row(row)

    def _get(self, connection: Connection, channel_id: int) -> Channel:
        row = connection.execute(
            select(alert_channels).where(alert_channels.c.id == channel_id)
        ).first()
        if row is None:
            raise NotFound("channel", channel_id)
        return Channel.from_row(row)


def _check_format(value: object) -> BodyFormat:
    if isinstance(value, str) and value in BodyFormat.__members__.values():
        return BodyFormat(value)
    allowed = ", ".join(f.value for f in BodyFormat)
    raise DefinitionError("format", f"{value!r} is not one of {allowed}")
