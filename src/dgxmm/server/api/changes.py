"""What changed since: one counter per topic, which the pages poll to update in place.

A page names the topics it shows (``jobs``, ``deployments``, ``insights``, ``alerts``) and
asks every couple of seconds ``GET /api/changes?topics=jobs&since=<version>``; only when the
answer's ``changed`` is true does it fetch itself again and swap the parts marked
``data-live`` (``static/live.js``).

The answer renders nothing: each topic's version is the store's change counter
(``store/versions.py``, bumped in the transaction of every change to the topic's tables, the
same on every instance), and for ``jobs`` also this instance's host counter (runs started and
taken back, skips, which live in its memory). Both are kept in memory as things change
(``ChangeVersions.latest``): an unchanged answer asks the database nothing and runs on the
event loop, with no hop to a worker thread (issue 28: under load each hop waited for a CPU
and for the interpreter's lock). Only when the kept counters may be behind, or ``since``
differs (the rows that moved are read), is the database asked, on a worker thread. A count
over a window (a job's runs in the last hour) is not a change by itself: it is shown afresh
with the topic's next change.

With ``since``, the answer's ``keys`` also says which rows moved, per topic: for ``jobs``, the
names of the jobs whose runs started, ended or were skipped (from the store's
``change_keys`` and the host's moves). A page fetches those rows alone. A topic's keys are
null when one of its changes named no rows (a define may add a row or move the order), or
``since`` is too far behind: the page is then fetched whole.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from dgxmm.errors import InvalidInput
from dgxmm.server.edge.deps import ServicesDep, Viewer
from dgxmm.server.edge.openapi import answers
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


def versions(services: Services, topics: list[Topic], counters: dict[Topic, int]) -> dict[str, str]:
    """Return each topic's version from its counter (and the host's, for ``jobs``)."""
    found = {topic.value: str(counters[topic]) for topic in topics}
    if Topic.JOBS in counters:
        found[Topic.JOBS.value] += f"-{services.host.moves.count}"
    return found


def moved_keys(
    services: Services, names: list[str], since: str, found: dict[str, str]
) -> dict[str, list[str] | None]:
    """Return, per topic, the rows that moved from ``since`` to ``found`` (None: unknown)."""
    unknown: dict[str, list[str] | None] = dict.fromkeys(names)
    seen = since.split(".")
    if len(seen) != len(names):
        return unknown  # a version of other topics: nothing to compare
    keys: dict[str, list[str] | None] = {}
    for name, was in zip(names, seen, strict=True):
        then, now = _counters(was), _counters(found[name])
        if then is None or now is None or len(then) != len(now):
            keys[name] = None
            continue
        topic = Topic(name)
        moved = services.host.store.versions.keys_since(topic, then[0], now[0])
        if moved is not None and topic is Topic.JOBS:
            in_memory = services.host.moves.keys_since(then[1])
            moved = None if in_memory is None else moved | in_memory
        keys[name] = None if moved is None else sorted(moved)
    return keys


def _counters(version: str) -> tuple[int, ...] | None:
    """Read a topic's version ("12", or "12-3" for jobs); None for one that is not."""
    parts = version.split("-")
    if not all(part.isascii() and part.isdigit() and len(part) < 19 for part in parts):
        return None
    return tuple(int(part) for part in parts)


@router.get("", responses=answers(400))
async def changes(
    services: ServicesDep,
    _: Viewer,
    topics: Annotated[str, Query(max_length=200)] = "jobs",
    since: Annotated[str | None, Query(max_length=200)] = None,
) -> dict[str, Any]:
    """The topics' version, whether it differs from ``since`` (the last one seen), and with
    ``since`` the rows that moved (``keys``, per topic; null: fetch the page whole)."""
    names = [name.strip() for name in topics.split(",") if name.strip()]
    if not names:
        raise InvalidInput("topics", "name at least one of " + ", ".join(TOPICS))
    wanted = _topics(names)
    kept = services.host.store.versions.latest(wanted)
    if kept is not None:
        answer = _answer(names, versions(services, wanted, kept), since)
        if since is None:
            return answer
        if not answer["changed"]:
            answer["keys"] = {name: [] for name in names}  # nothing moved
            return answer
    return await run_in_threadpool(_asked, services, names, wanted, since)


def _answer(names: list[str], found: dict[str, str], since: str | None) -> dict[str, Any]:
    version = ".".join(found[name] for name in names)
    return {"version": version, "changed": since != version, "topics": found}


def _asked(
    services: Services, names: list[str], wanted: list[Topic], since: str | None
) -> dict[str, Any]:
    """The answer from the database, on a worker thread."""
    found = versions(services, wanted, services.host.store.versions.read(wanted))
    answer = _answer(names, found, since)
    if since is not None:
        answer["keys"] = moved_keys(services, names, since, found)
    return answer
