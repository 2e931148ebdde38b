"""What changed since: one counter per topic, which the pages poll to update in place.

A page names the topics it shows (``jobs``, ``deployments``, ``insights``, ``alerts``) and
asks every couple of seconds ``GET /api/changes?topics=jobs&since=<version>``; only when the
answer's ``changed`` is true does it fetch itself again and swap the parts marked
``data-live`` (``static/live.js``).

The answer renders nothing: each topic's version is the store's change counter
(``store/versions.py``, bumped in the transaction of every change to the topic's tables, the
same on every instance), and for ``jobs`` also this instance's host counter (runs started and
taken back, skips, which live in its memory). One query by primary key, whatever the number
of jobs or deployments. A count over a window (a job's runs in the last hour) is not a change
by itself: it is shown afresh with the topic's next change.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dgxmm.errors import InvalidInput
from dgxmm.server.deps import ServicesDep, Viewer
from dgxmm.server.openapi import answers
from dgxmm.server.services import Services
from dgxmm.store import Topic

__all__ = ["TOPICS", "router", "versions"]

router = APIRouter(prefix="/api/changes", tags=["changes"])

TOPICS = tuple(topic.value for topic in Topic)


def _topics(names: list[str]) -> list[Topic]:
    topics = []
    for name in names:
        try:
            topics.append(Topic(name))
        except ValueError:
            raise InvalidInput("topics", f"{name!r} is not one of {', '.join(TOPICS)}") from None
    return topics


def versions(services: Services, names: list[str]) -> dict[str, str]:
    """Return each topic's version (``InvalidInput`` for a topic that is not one)."""
    topics = _topics(names)
    counters = services.host.store.versions.read(topics)
    found = {topic.value: str(counters[topic]) for topic in topics}
    if Topic.JOBS in counters:
        found[Topic.JOBS.value] += f"-{services.host.changes}"
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
