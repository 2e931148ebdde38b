"""The sender: claims due deliveries, POSTs them signed, records each attempt, plans retries.

It runs on the alerts' own thread (``service.py``), never on a tick, a pass or a request. A
request has a short timeout and follows no redirect (a 3xx is a failure: a webhook that
moved is the admin's to change, and following it would send the body and its signature
where nobody chose). A failure is tried again after ``first_retry_s``, doubling up to
``max_retry_s``, until ``give_up_after_s`` (an hour) after the message was made; then the
delivery is failed. A channel whose attempts failed ``failing_after`` times in a row raises
an insight (through ``on_failing``); its next success dismisses it (``on_recovered``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
from sqlalchemy import Engine, select, update

from dgxmm.alerts.bodies import render, sign
from dgxmm.alerts.channels import Channel, Channels, Target
from dgxmm.alerts.deliveries import AttemptOutcome, Deliveries
from dgxmm.alerts.messages import Message
from dgxmm.alerts.sealing import Unsealable
from dgxmm.alerts.tables import alert_channels, alert_deliveries, alert_messages
from dgxmm.clock import Clock
from dgxmm.errors import NotFound
from dgxmm.store import reading, writing
from dgxmm.time_units import SECOND_US

__all__ = ["SendPolicy", "Sender"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class SendPolicy:
    """How a delivery is sent and retried."""

    timeout_s: float = 5.0  # connect, read, write: one bound for each
    first_retry_s: float = 10.0
    max_retry_s: float = 600.0
    give_up_after_s: float = 3600.0  # retried for up to an hour after the message was made
    failing_after: int = 5  # failed attempts in a row that raise the channel's insight

    def retry_after_us(self, attempts: int) -> int:
        """Return the wait before the try after ``attempts`` failed ones (1 and up)."""
        wait = min(self.max_retry_s, self.first_retry_s * 2 ** max(0, attempts - 1))
        return int(wait * SECOND_US)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Answer:
    status_code: int | None
    error: str | None

    @property
    def sent(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


ChannelHook = Callable[[Channel], None]


class Sender:
    """Sends what is due, in the name of one instance."""

    def __init__(
        self,
        engine: Engine,
        *,
        channels: Channels,
        deliveries: Deliveries,
        clock: Clock,
        instance: str,
        policy: SendPolicy,
        on_failing: ChannelHook,
        on_recovered: ChannelHook,
        on_unsealable: Callable[[str], None] = lambda instance: None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._engine = engine
        self._channels = channels
        self._deliveries = deliveries
        self._clock = clock
        self._instance = instance
        self.policy = policy
        self._on_failing = on_failing
        self._on_recovered = on_recovered
        self._on_unsealable = on_unsealable
        # The transport itself, not a Client: a Client logs every request's whole URL (a
        # Slack or Teams URL is a credential), and follows redirects when asked; a transport
        # does neither. No proxies from the environment, no cookies kept between receivers.
        self._transport = transport or httpx.HTTPTransport()
        self._timeout = httpx.Timeout(policy.timeout_s).as_dict()

    def send_due(self, limit: int = 20) -> int:
        """Send the deliveries due now (each one this instance claims); return how many."""
        sent = 0
        for delivery_id, message_id, channel_id in self._deliveries.due(
            self._clock.now_us(), limit
        ):
            if not self._may_send(delivery_id, message_id, channel_id):
                continue
            # Each of connect, write and read has the timeout: past four of them and 30 s, the
            # claimant is taken to be gone and another instance may send it.
            hold = round((4 * self.policy.timeout_s + 30) * SECOND_US)
            claimed = self._deliveries.claim(
                delivery_id, instance=self._instance, now_us=self._clock.now_us(), hold_us=hold
            )
            if claimed:
                self._send(delivery_id, message_id, channel_id)
                sent += 1
        return sent

    def _may_send(self, delivery_id: int, message_id: int, channel_id: int) -> bool:
        """Tell whether this instance can open the channel (or should fail the delivery).

        An instance whose sealing key is not the others' cannot: it leaves the delivery to
        one that can (later, so that the deliveries due behind it go on) and says so through
        ``on_unsealable``. Only when nobody sent it within its hour does it fail it.
        """
        try:
            with reading(self._engine) as connection:
                self._channels.target(connection, channel_id)
            return True
        except NotFound:
            return True  # removed meanwhile: the claim finds nothing
        except Unsealable:
            self._on_unsealable(self._instance)
        with reading(self._engine) as connection:
            made = connection.execute(
                select(alert_messages.c.created_at).where(alert_messages.c.id == message_id)
            ).scalar()
        now = self._clock.now_us()
        if made is None or now >= int(made) + round(self.policy.give_up_after_s * SECOND_US):
            return True
        self._deliveries.postpone(delivery_id, now + self.policy.retry_after_us(1))
        return False

    def close(self) -> None:
        """Close the HTTP client."""
        self._transport.close()

    def _send(self, delivery_id: int, message_id: int, channel_id: int) -> None:
        with reading(self._engine) as connection:
            message = Message.from_row(
                connection.execute(
                    select(alert_messages).where(alert_messages.c.id == message_id)
                ).one()
            )
            target: Target | None = None
            unusable = ""
            try:
                target = self._channels.target(connection, channel_id)
            except (Unsealable, NotFound) as error:
                unusable = str(error)
        began = time.monotonic()
        if target is None:
            answer = _Answer(status_code=None, error=f"cannot send: {unusable}")
        else:
            answer = self._post(
                target.url, target.secret, render(message, target.channel.body_format)
            )
        duration_ms = round((time.monotonic() - began) * 1000)
        now = self._clock.now_us()
        given_up_at = message.created_at + round(self.policy.give_up_after_s * SECOND_US)
        attempts = self._attempts(delivery_id) + 1
        next_at = now + self.policy.retry_after_us(attempts)
        if answer.sent:
            outcome = AttemptOutcome.SENT
        elif target is not None and next_at <= given_up_at:
            outcome = AttemptOutcome.RETRIED
        else:
            outcome = AttemptOutcome.FAILED
        recorded = self._deliveries.record(
            delivery_id,
            instance=self._instance,
            outcome=outcome,
            at_us=now,
            status_code=answer.status_code,
            error=answer.error,
            duration_ms=duration_ms,
            next_at=next_at if outcome is AttemptOutcome.RETRIED else None,
        )
        if recorded:
            self._count(channel_id, sent=answer.sent)

    def _post(self, url: str, secret: str, body: bytes) -> _Answer:
        headers = sign(secret, self._clock.now_us() // SECOND_US, body)
        headers["User-Agent"] = "dgxmm-alerts"
        try:
            request = httpx.Request(
                "POST", url, content=body, headers=headers, extensions={"timeout": self._timeout}
            )
            response = self._transport.handle_request(request)
            response.close()  # its body is not read: a receiver's words are not needed
        except httpx.TimeoutException:
            return _Answer(status_code=None, error=f"no answer within {self.policy.timeout_s:g} s")
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as error:
            # Its kind only: an error's text may quote the URL, a credential.
            return _Answer(status_code=None, error=f"{type(error).__name__}: cannot reach it")
        code = response.status_code
        if 300 <= code < 400:
            return _Answer(status_code=code, error="a redirect, not followed")
        if 200 <= code < 300:
            return _Answer(status_code=code, error=None)
        return _Answer(status_code=code, error=f"answered {code}")

    def _attempts(self, delivery_id: int) -> int:
        with reading(self._engine) as connection:
            found = connection.execute(
                select(alert_deliveries.c.attempts).where(alert_deliveries.c.id == delivery_id)
            ).scalar()
        return int(found or 0)

    def _count(self, channel_id: int, *, sent: bool) -> None:
        """Keep the channel's failures in a row; tell the hooks when it starts or stops failing."""
        c = alert_channels.c
        with writing(self._engine) as connection:
            before = connection.execute(select(c.failures).where(c.id == channel_id)).scalar()
            if before is None:
                return  # removed meanwhile
            after = 0 if sent else int(before) + 1
            connection.execute(
                update(alert_channels).where(c.id == channel_id).values(failures=after)
            )
        try:
            channel = self._channels.get(channel_id)
            if not sent and after == self.policy.failing_after:
                self._on_failing(channel)
            elif sent and int(before) >= self.policy.failing_after:
                self._on_recovered(channel)
        except Exception:  # an insight that cannot be written must not stop the sending
            log.exception("dgxmm alerts: could not note channel %s's health", channel_id)
