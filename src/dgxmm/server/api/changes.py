"""What changed since: one short digest per topic, which the pages poll to update in place.

A page names the topics it shows (``jobs``, ``deployments``, ``insights``) and asks every
couple of seconds ``GET /api/changes?topics=jobs&since=<version>``; only when the answer's
``changed`` is true does it fetch itself again and swap the parts marked ``data-live``
(``static/live.js``). A digest is a hash of what the page shows, so the poll stays a few
hundred bytes however many jobs or deployments there are, and one rule decides "changed".
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Query

from dgxmm.errors import InvalidInput
from dgxmm.server.deps import ServicesDep, Viewer
from dgxmm.server.job_list import job_rows
from dgxmm.server.openapi import answers
from dgxmm.server.services import Services
from dgxmm.time_units import MINUTE_US

__all__ = ["TOPICS", "router", "versions"]

router = APIRouter(prefix="/api/changes", tags=["changes"])

TOPICS = ("jobs", "deployments", "insights", "alerts")


def _jobs(services: Services) -> object:
    return job_rows(services.host, full_errors=False)


def _deployments(services: Services) -> object:
    fleet = services.fleet
    if fleet is None:
        return None
    shown = []
    for deployment in fleet.deployments.list():
        facts = deployment.to_json()
        # The last request moves with every request: a page shows it by the minute, so a
        # busy deployment does not make its page swap every poll.
        last = deployment.last_request_at
        facts["last_request_at"] = None if last is None else last // MINUTE_US
        newest = fleet.events.list(deployment.id, 1)
        shown.append((facts, newest[0].id if newest else None))
    return shown


def _insights(services: Services) -> object:
    fleet = services.fleet
    if fleet is None:
        return None
    return [(i.id, i.dismissed_at) for i in fleet.insights.list(True, limit=100)]


def _alerts(services: Services) -> object:
    alerts = services.alerts
    if alerts is None:
        return None
    # A digest only: what changed is read by the admins' page, never from here.
    channels = [(c.id, c.failures, c.updated_at) for c in alerts.channels.list()]
    rules = [(r.id, r.enabled, r.channel_ids) for r in alerts.rules.list()]
    log = [
        (e.delivery.id, e.delivery.state, e.delivery.attempts)
        for e in alerts.deliveries.log(limit=50)
    ]
    return channels, rules, log


_DIGESTS = {
    "jobs": _jobs,
    "deployments": _deployments,
    "insights": _insights,
    "alerts": _alerts,
}


def versions(services: Services, topics: list[str]) -> dict[str, str]:
    """Return each topic's digest (``InvalidInput`` for a topic that is not one)."""
    found: dict[str, str] = {}
    for topic in topics:
        digest = _DIGESTS.get(topic)
        if digest is None:
            raise InvalidInput("topics", f"{topic!r} is not one of {', '.join(TOPICS)}")
        data = orjson.dumps(digest(services), default=str)
        found[topic] = hashlib.blake2b(data, digest_size=8).hexdigest()
    return found


@router.get("", responses=answers(400))
def changes(
    services: ServicesDep,
    _: Viewer,
    topics: Annotated[str, Query(max_length=200)] = "jobs",
    since: Annotated[str | None, Query(max_length=200)] = None,
) -> dict[str, Any]:
    """The topics' version, and whether it differs from ``since`` (the last one seen)."""
    names = [name.strip() for name in topics.split(",") if name.strip()]
    if not names:
        raise InvalidInput("topics", "name at least one of " + ", ".join(TOPICS))
    found = versions(services, names)
    version = ".".join(found[name] for name in names)
    return {"version": version, "changed": since != version, "topics": found}
