"""Rights: what a job asks for when it is defined, and the authorizer that answers.

When a job is defined, the definer's ``Authorizer`` is asked for everything the job will do:

- ``Execute(query)`` to call its saved query,
- ``Write(table)`` for every table the query's SQL may write (found by ``analysis.py``),
- ``Create(directory)`` for a backup job's directory.

The requests it allows are stored with the job as its *effects*; each run may do exactly
them, and read. A refused request refuses the whole definition (``Forbidden``): a job whose
runs could only fail is not worth keeping. The store has no identities of its own, so the
default authorizer allows everything; a host that has identities passes its own, and may
also pass a ``recheck`` authorizer that the store asks again before every run. ``grant``
asks for a job's requests; the catalog stores what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dgxmm.errors import DefinitionError, Forbidden, NotAllowed
from dgxmm.store.catalog.analysis import analyze
from dgxmm.store.catalog.definitions import JobAction, JobSpec
from dgxmm.store.catalog.protection import ProtectedTable, write_refusal
from dgxmm.store.database import Dialect

__all__ = [
    "AllowAll",
    "Authorizer",
    "Create",
    "Execute",
    "Request",
    "Write",
    "ask_again",
    "effects_from_json",
    "effects_to_json",
    "grant",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Execute:
    """Call the saved query ``query``."""

    query: str

    def __str__(self) -> str:
        return f"Execute({self.query})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Write:
    """Insert, update or delete rows of ``table`` (normalized, see ``analysis.table_key``)."""

    table: str

    def __str__(self) -> str:
        return f"Write({self.table})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Create:
    """Create files in ``directory`` (an absolute path)."""

    directory: str

    def __str__(self) -> str:
        return f"Create({self.directory})"


Request = Execute | Write | Create


class Authorizer(Protocol):
    """Answers whether ``actor`` (None: no identity) may have a job do ``request``."""

    def allows(self, actor: str | None, request: Request) -> bool:
        """Return True when the request is allowed."""
        ...


class AllowAll:
    """The authorizer of a store without identities: the user owns the machine's files."""

    def allows(self, actor: str | None, request: Request) -> bool:
        """Allow everything."""
        return True


def effects_to_json(effects: Iterable[Request]) -> list[dict[str, str]]:
    """Return effects as JSON: ``[{"execute": q}, {"write": t}, {"create": d}]``."""
    out: list[dict[str, str]] = []
    for effect in effects:
        if isinstance(effect, Execute):
            out.append({"execute": effect.query})
        elif isinstance(effect, Write):
            out.append({"write": effect.table})
        else:
            out.append({"create": effect.directory})
    return out


def effects_from_json(data: Any) -> tuple[Request, ...]:
    """Read effects written by ``effects_to_json``; raise ``ValueError`` on anything else."""
    if not isinstance(data, list):
        raise ValueError("effects: expected a list")
    effects: list[Request] = []
    for item in data:
        if not isinstance(item, dict) or len(item) != 1:
            raise ValueError(f"effects: {item!r} is not one request")
        ((kind, value),) = item.items()
        if not isinstance(value, str):
            raise ValueError(f"effects: {item!r} is not one request")
        if kind == "execute":
            effects.append(Execute(query=value))
        elif kind == "write":
            effects.append(Write(table=value))
        elif kind == "create":
            effects.append(Create(directory=value))
        else:
            raise ValueError(f"effects: {kind!r} is not a request")
    return tuple(effects)


def grant(
    spec: JobSpec,
    *,
    body: str | None,
    actor: str | None,
    authorizer: Authorizer,
    dialect: Dialect,
    protected: Mapping[str, ProtectedTable],
) -> tuple[Request, ...]:
    """Ask the authorizer for everything a job will do (``body``: its query's SQL).

    ``Forbidden`` when one request is refused; ``DefinitionError`` (field ``query``) when
    the query writes a protected table (stored before it was protected, or by an older dgxmm).
    """
    requests: list[Request] = []
    if spec.action is JobAction.QUERY:
        assert spec.query is not None
        assert body is not None  # check_job found the query
        requests.append(Execute(query=spec.query))
        writes = analyze(body, dialect).writes
        refusal = write_refusal(writes, protected, dialect)
        if refusal is not None:
            raise DefinitionError("query", f"saved query {spec.query} writes {refusal}")
        requests.extend(Write(table=table) for table in sorted(writes))
    elif spec.action is JobAction.BACKUP:
        assert spec.path is not None
        requests.append(Create(directory=str(spec.path)))
    for request in requests:
        if not authorizer.allows(actor, request):
            who = actor if actor is not None else "the definer"
            raise Forbidden(f"job {spec.name}: {who} may not {request}")
    return tuple(requests)


def ask_again(
    name: str, definer: str | None, effects: Iterable[Request], authorizer: Authorizer | None
) -> None:
    """Ask ``authorizer`` again for each of a job's effects before a run; ``NotAllowed``.

    The host that has identities passes ``Store.open(recheck=...)``: a definer whose rights
    were revoked no longer runs (the spec's "an embedding server re-checks on every run").
    """
    if authorizer is None:
        return
    for effect in effects:
        if not authorizer.allows(definer, effect):
            who = definer if definer is not None else "its definer"
            raise NotAllowed(f"job {name}: {who} may no longer {effect}; the run was refused")
