"""``Alerts``, the facade: channels, rules, the log, and the thread that evaluates and sends.

Nothing here runs on a tick, a pass or a request. The host's pulse (``pulse``, on the
instance holding the ticker's lease) only notes the time and wakes the alerts' own thread;
that thread evaluates the rules, then starts a lane for each channel with something due
(``sending/lanes.py``) and goes on: no channel waits for another. Every instance sends (each
delivery is claimed by one of them); only the lease holder evaluates. A test send writes its
message and returns at once: a lane sends it. Removing a channel stops its lane, and the
attempt under way with it.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable

from dgxmm.alerts.channels import Channel, Channels
from dgxmm.alerts.conditions import Conditions
from dgxmm.alerts.deliveries import Deliveries
from dgxmm.alerts.destinations import Destinations
from dgxmm.alerts.evaluator import Evaluator, Finder
from dgxmm.alerts.keys import KeyFile, Keys
from dgxmm.alerts.messages import MessageKind, post_message, purge_messages
from dgxmm.alerts.rules import Rules
from dgxmm.alerts.sealing import MIN_KEY_BYTES, Sealer
from dgxmm.alerts.sending.lanes import Lanes
from dgxmm.alerts.sending.sender import Sender, SendPolicy
from dgxmm.alerts.tables import alert_channels, alert_deliveries, alert_rule_channels, alert_rules
from dgxmm.clock import Clock
from dgxmm.decider import ScheduleService
from dgxmm.errors import Conflict
from dgxmm.fleet import LOG_TAIL_MARK, AuditAction, AuditSubject, Fleet, InsightKind, Severity
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext
from dgxmm.store import Store, Topic, writing
from dgxmm.time_units import DAY_US
from dgxmm.words import counted

__all__ = ["Alerts"]

log = logging.getLogger(__name__)

# The sender looks for due deliveries this often even when nothing woke it (retries, and the
# deliveries another instance's evaluator made).
POLL_SECONDS = 1.0
ACTOR = "alerts"
ALERTS_PURGE = "alerts_purge"
KEEP_DAYS = 30  # messages, their deliveries and attempts; resolved incidents


class Alerts:
    """Alerts over one store and fleet."""

    def __init__(
        self,
        store: Store,
        fleet: Fleet,
        *,
        key: bytes | KeyFile,
        schedules: ScheduleService | None = None,
        clock: Clock | None = None,
        policy: SendPolicy | None = None,
        conditions: Finder | None = None,
        poll_seconds: float = POLL_SECONDS,
        shown: Callable[[str], str] | None = None,
        destinations: Destinations | None = None,
    ) -> None:
        self.clock = clock or store.clock
        self._store = store
        self._fleet = fleet
        engine = store.engine
        watched = (alert_channels, alert_rules, alert_rule_channels, alert_deliveries)
        store.versions.watch({table.name: Topic.ALERTS for table in watched})
        # The key that seals the channels' URLs and secrets: serve's is kept in the data
        # directory (a KeyFile, rotated there); a test's is given as bytes.
        self._key_file = key if isinstance(key, KeyFile) else None
        keys = key.load() if isinstance(key, KeyFile) else Keys(current=key)
        self.sealer = Sealer(keys.current, keys.older)
        # Private networks refused unless the operator allows them (docs/alerts.md).
        self.destinations = destinations or Destinations()
        self.lanes = Lanes(self._send_channel)
        self.channels = Channels(
            engine,
            self.clock,
            self.sealer,
            fleet.audit,
            destinations=self.destinations,
            on_removed=self.lanes.cancel,
        )
        self.rules = Rules(engine, self.clock, fleet.audit)
        self.deliveries = Deliveries(engine)
        self.conditions: Finder = conditions or Conditions(store, fleet, schedules)
        self.evaluator = Evaluator(
            engine, self.rules, self.conditions, shown=shown or _without_log_tail
        )
        self.sender = Sender(
            engine,
            channels=self.channels,
            deliveries=self.deliveries,
            clock=self.clock,
            instance=store.instance,
            policy=policy or SendPolicy(),
            on_failing=self._channel_failing,
            on_recovered=self._channel_recovered,
            destinations=self.destinations,
            on_unsealable=self._key_differs,
        )
        self.poll_seconds = poll_seconds
        self._asked_at: int | None = None  # the last pulse's time, not yet evaluated
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the host's side ------------------------------------------------------------------

    def pulse(self, now_us: int) -> None:
        """Ask for an evaluation at ``now_us`` and return at once (the host's pulse)."""
        with self._lock:
            self._asked_at = now_us
        self._wake.set()

    def start(self) -> None:
        """Seal again what is not under the current key and scheme; start the thread and lanes."""
        self.reseal()
        self.lanes.start()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="dgxmm-alerts", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread, then the lanes: an attempt under way ends within its deadline
        and is recorded (one still going after ``timeout`` is closed)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.lanes.stop(grace=max(timeout, self.sender.policy.timeout_s + 1))

    def step(self) -> None:
        """Evaluate if a pulse asked, then send what is due and wait: one pass by hand.

        The thread's own pass does not wait: it starts the lanes and goes on (``_run``).
        """
        self._evaluate()
        self.sender.send_due()

    def _evaluate(self) -> None:
        with self._lock:
            asked, self._asked_at = self._asked_at, None
        if asked is not None:
            self.evaluator.evaluate(asked)

    def _dispatch(self) -> None:
        # A channel removed on another instance: its lane here stops too.
        self.lanes.keep_only(channel.id for channel in self.channels.list())
        self.lanes.run(self.deliveries.due_channels(self.clock.now_us()))

    async def _send_channel(self, channel_id: int) -> None:
        await self.sender.send_channel(channel_id)
        self._wake.set()  # more may be due behind it (a lane sends at most a few at a time)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self.poll_seconds)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self._evaluate()
                self._dispatch()
            except Exception:  # the thread must outlive any one bad pass
                log.exception("dgxmm alerts: a pass failed; going on")

    def system_jobs(self) -> list[Job]:
        """Return ``alerts_purge`` (daily): the log kept ``KEEP_DAYS`` days."""
        return [
            Job(
                ALERTS_PURGE,
                JobKind.SYSTEM,
                CronSchedule.parse("40 3 * * *"),
                self._purge,
                description=f"deletes alert messages, their deliveries and attempts, and "
                f"resolved incidents older than {KEEP_DAYS} days",
            )
        ]

    def _purge(self, ctx: RunContext) -> str:
        deleted = purge_messages(self._store.engine, ctx.started_at - KEEP_DAYS * DAY_US)
        return f"{counted(deleted, 'alert message')} deleted"

    # -- what admins ask --------------------------------------------------------------------

    def test(self, channel_id: int, *, actor: str) -> int:
        """Queue one example message to a channel (audited); return its delivery's id."""
        channel = self.channels.get(channel_id)
        now = self.clock.now_us()
        with writing(self._store.engine) as connection:
            _, deliveries = post_message(
                connection,
                kind=MessageKind.TEST,
                title=f"a test of channel {channel.name}",
                text=f"{actor} sent this test from dgxmm: the channel {channel.name} works.",
                channel_ids=[channel.id],
                at_us=now,
            )
            self._fleet.audit.record(
                actor=actor,
                action=AuditAction.ALERT_CHANNEL_TEST,
                subject=AuditSubject.ALERT_CHANNEL,
                subject_id=channel.id,
                connection=connection,
            )
        self._wake.set()
        return deliveries[0]

    # -- the sealing key ----------------------------------------------------------------------

    def reseal(self) -> int:
        """Seal again each value not under the current key and scheme (an upgrade's ``s1``
        values, a rotation cut short, which is then finished); return the channels changed."""
        changed = self.channels.reseal()
        if self._key_file is not None and self._key_file.pending():
            self._key_file.commit()
            self.sealer.forget_older()
        return changed

    def rotate_key(self, *, actor: str) -> int:
        """Make a new sealing key, seal every channel again under it, keep it in place of the
        old one (audited); return how many channels. ``Conflict`` when the key is not kept
        in a file here, or a channel does not open with this instance's key."""
        if self._key_file is None:
            raise Conflict("this instance's sealing key is not kept in a file: not rotated")
        new = secrets.token_bytes(MIN_KEY_BYTES)
        self._key_file.begin(new)
        try:
            count = self.channels.rotate(new, actor=actor)
        except BaseException:
            self._key_file.abort()
            raise
        self._key_file.commit()
        self.sealer.forget_older()
        return count

    # -- a channel's health, as an insight ---------------------------------------------------

    def _channel_failing(self, channel: Channel) -> None:
        self._fleet.insights.raise_insight(
            InsightKind.ALERT_CHANNEL_FAILING,
            deployment_id=None,
            severity=Severity.WARNING,
            message=f"alert channel {channel.name} failed {channel.failures} times in a row: "
            "see the alerts page's log",
            key=f"alert-channel:{channel.id}",
        )

    def _key_differs(self, instance: str) -> None:
        self._fleet.insights.raise_insight(
            InsightKind.ALERT_CHANNEL_FAILING,
            deployment_id=None,
            severity=Severity.WARNING,
            message=f"instance {instance} cannot open the alert channels' URLs and secrets: "
            "its sealing key is not the one they were sealed with (give every instance the "
            "same alerts.key or DGXMM_ALERTS_KEY; docs/alerts.md)",
            key=f"alerts-key:{instance}",
        )

    def _channel_recovered(self, channel: Channel) -> None:
        self._fleet.insights.dismiss_open(f"alert-channel:{channel.id}", ACTOR)


def _without_log_tail(text: str) -> str:
    """Return ``text`` without a model server's log tail (serve masks key-like words too)."""
    return text.split(LOG_TAIL_MARK, 1)[0]
