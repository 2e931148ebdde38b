"""The sender: claims due deliveries, POSTs them signed, records each attempt, plans retries.

It runs in lanes (``lanes.py``), one task per channel on the alerts' own loop, never on a
tick, a pass or a request: a channel's deliveries go one after another, and no channel waits
for another. An attempt has one deadline for all of it (``attempt.py``) and follows no
redirect (a 3xx is a failure: a webhook that moved is the admin's to change, and following
it would send the body and its signature where nobody chose). A failure is tried again after
``first_retry_s``, doubling up to ``max_retry_s``, until ``give_up_after_s`` (an hour) after
the message was made; then the delivery is failed. A channel whose attempts failed
``failing_after`` times in a row raises an insight (through ``on_failing``); its next
success dismisses it (``on_recovered``). The database is reached on worker threads
(``asyncio.to_thread``), so the loop only ever waits on receivers, each within its deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from sqlalchemy import Engine, select, update

from dgxmm.alerts.channels import Channel, Channels, Target
from dgxmm.alerts.deliveries import AttemptOutcome, Deliveries
from dgxmm.alerts.destinations import Destinations
from dgxmm.alerts.messages import Message
from dgxmm.alerts.sealing import Unsealable
from dgxmm.alerts.sending.attempt import Answer, post
from dgxmm.alerts.sending.bodies import render, sign
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

    timeout_s: float = 5.0  # one deadline for a whole attempt: resolve, connect, send, answer
    first_retry_s: float = 10.0
    max_retry_s: float = 600.0
    give_up_after_s: float = 3600.0  # retried for up to an hour after the message was made
    failing_after: int = 5  # failed attempts in a row that raise the channel's insight

    def retry_after_us(self, attempts: int) -> int:
        """Return the wait before the try after ``attempts`` failed ones (1 and up)."""
        wait = min(self.max_retry_s, self.first_retry_s * 2 ** max(0, attempts - 1))
        return int(wait * SECOND_US)


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
        destinations: Destinations,
        on_unsealable: Callable[[str], None] = lambda instance: None,
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
        self._destinations = destinations

    def send_due(self, limit: int = 20) -> int:
        """Send what is due now, every channel's lane at once, and wait; return how many.

        The alerts' thread does not wait: it hands each channel to its lane (``Lanes.run``).
        This is for a caller that wants the sends done when it returns (``Alerts.step``, a
        test on a manual clock).
        """
        channels = sorted(self._deliveries.due_channels(self._clock.now_us()))

        async def every_lane() -> int:
            counts = await asyncio.gather(*(self.send_channel(c, limit) for c in channels))
            return sum(counts)

        # On a thread of its own: the caller's may run an event loop already (an ASGI test
        # client, Playwright's sync API), and asyncio.run refuses to nest in one.
        with ThreadPoolExecutor(1, thread_name_prefix="dgxmm-alerts-send") as pool:
            return pool.submit(asyncio.run, every_lane()).result()

    async def send_channel(self, channel_id: int, limit: int = 20) -> int:
        """Send one channel's due deliveries one after another (its lane); return how many."""
        sent = 0
        while sent < limit:
            claimed = await asyncio.to_thread(self._claim_next, channel_id)
            if claimed is None:
                break
            await self._send(*claimed)
            sent += 1
        return sent

    def _claim_next(self, channel_id: int) -> tuple[int, int, int] | None:
        """Claim the channel's oldest due delivery this instance can send (or None)."""
        for delivery_id, message_id, _ in self._deliveries.due(
            self._clock.now_us(), channel_id=channel_id
        ):
            if not self._may_send(delivery_id, message_id, channel_id):
                continue
            # An attempt ends within its deadline: past two of them and 30 s, the claimant
            # is taken to be gone and another instance may send it.
            hold = round((2 * self.policy.timeout_s + 30) * SECOND_US)
            if self._deliveries.claim(
                delivery_id, instance=self._instance, now_us=self._clock.now_us(), hold_us=hold
            ):
                return delivery_id, message_id, channel_id
        return None

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

    async def _send(self, delivery_id: int, message_id: int, channel_id: int) -> None:
        message, target, unusable = await asyncio.to_thread(self._read, message_id, channel_id)
        began = time.monotonic()
        if target is None:
            answer = Answer(status_code=None, error=f"cannot send: {unusable}")
        else:
            body = render(message, target.channel.body_format)
            headers = sign(target.secret, self._clock.now_us() // SECOND_US, body)
            headers["User-Agent"] = "dgxmm-alerts"
            answer = await post(
                target.url,
                body,
                headers,
                deadline_s=self.policy.timeout_s,
                destinations=self._destinations,
            )
        duration_ms = round((time.monotonic() - began) * 1000)
        await asyncio.to_thread(
            self._record,
            delivery_id,
            message,
            channel_id,
            answer=answer,
            usable=target is not None,
            duration_ms=duration_ms,
        )

    def _read(self, message_id: int, channel_id: int) -> tuple[Message, Target | None, str]:
        with reading(self._engine) as connection:
            message = Message.from_row(
                connection.execute(
                    select(alert_messages).where(alert_messages.c.id == message_id)
                ).one()
            )
            try:
                return message, self._channels.target(connection, channel_id), ""
            except (Unsealable, NotFound) as error:
                return message, None, str(error)

    def _record(
        self,
        delivery_id: int,
        message: Message,
        channel_id: int,
        *,
        answer: Answer,
        usable: bool,
        duration_ms: int,
    ) -> None:
        now = self._clock.now_us()
        given_up_at = message.created_at + round(self.policy.give_up_after_s * SECOND_US)
        attempts = self._attempts(delivery_id) + 1
        next_at = now + self.policy.retry_after_us(attempts)
        if answer.sent:
            outcome = AttemptOutcome.SENT
        elif usable and next_at <= given_up_at:
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
