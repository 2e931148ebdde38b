"""What the idle pulse looks at: the deployments with an idle policy, and their schedules.

``Watcher.current()`` reads them again only when the ``deployments`` or ``schedules`` change
versions moved (``store/versions.py``; one query by primary key otherwise): at 1,000
deployments, reading and sorting every deployment and schedule each second held the serving
interpreter about 40 ms a second, and every request that arrived meanwhile waited (issue 28).

Of every deployment, policy or not, a read keeps when it last came up, so that one which gets
a policy later counts its idle time from then: its state moved with a version, so a read sees
each coming up that a pulse over every deployment would have seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from dgxmm.decider.idle.ladder import ScheduleSlots
from dgxmm.decider.schedules.rows import ScheduleAction, ScheduleRows
from dgxmm.decider.schedules.slots import parse_time
from dgxmm.fleet import Deployment, DeploymentState, Fleet, IdlePolicy
from dgxmm.jobs import resolve_zone
from dgxmm.store import Store, Topic

__all__ = ["Watched", "Watcher"]

_TOPICS = (Topic.DEPLOYMENTS, Topic.SCHEDULES)


@dataclass(frozen=True, slots=True)
class Watched:
    """One read: the deployments with an idle policy and their slots, at ``versions``."""

    versions: dict[Topic, int]
    deployments: list[Deployment]
    ids: frozenset[int]  # the deployments'
    slots: dict[int, list[ScheduleSlots]]
    came_up: dict[int, int]  # every deployment's last coming up, as far as reads saw
    created: dict[int, int]  # every deployment's creation, to tell an id used again
    renewed: frozenset[int]  # rows not the ones of the read before (new, or an id used again)


def has_policy(deployment: Deployment) -> bool:
    """Tell whether the idle pulse steps it: a ladder with a step, the histogram, priced."""
    return deployment.idle_policy is not IdlePolicy.LADDER or not deployment.idle.is_off


class Watcher:
    """Reads what the pulse looks at, again only when it changed."""

    def __init__(self, store: Store, fleet: Fleet, rows: ScheduleRows) -> None:
        self._store = store
        self._fleet = fleet
        self._rows = rows
        self._last: Watched | None = None

    def current(self) -> Watched:
        """Return the last read, or a new one if the versions moved since (a new object)."""
        # The versions first: a change that lands between them and the rows is read now and
        # again at the next pulse, never missed.
        versions = self._store.versions.read(_TOPICS)
        last = self._last
        if last is not None and last.versions == versions:
            return last
        every = self._fleet.deployments.list()
        came_up: dict[int, int] = {}
        created = {d.id: d.created_at for d in every}
        renewed = set()
        for d in every:
            seen = None
            if last is not None and last.created.get(d.id) == d.created_at:
                seen = last.came_up.get(d.id)
            else:
                renewed.add(d.id)
            if d.state is DeploymentState.RUNNING and (seen is None or seen < d.state_since):
                seen = d.state_since
            if seen is not None:
                came_up[d.id] = seen
        deployments = [d for d in every if has_policy(d)]
        ids = frozenset(d.id for d in deployments)
        slots: dict[int, list[ScheduleSlots]] = {}
        for row in self._rows.enabled_slots():
            if row.deployment_id in ids:
                slots.setdefault(row.deployment_id, []).append(
                    ScheduleSlots(
                        action=ScheduleAction(row.action),
                        days=row.days,
                        time=parse_time(row.at_time),
                        zone=resolve_zone(row.time_zone),
                    )
                )
        self._last = Watched(
            versions, deployments, ids, slots, came_up, created, frozenset(renewed)
        )
        return self._last
