"""The catalog's user jobs as the host lists them: by name, in name order, kept by version.

The job list, the API's pages and a define's answer read them at every request; reading
every job again at each one would cost a define at 10,000 jobs what 10,000 defines cost. So
the definitions are kept with the catalog version they were read at, and after a change only
the jobs the journal names are read again, the order kept by bisection rather than by sorting
every job again (issue 28).
"""

from __future__ import annotations

import bisect

from dgxmm.store import JobDefinition, Store

__all__ = ["CatalogJobs"]


class CatalogJobs:
    """The user jobs of one store's catalog, read again only as the catalog moves."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._kept: tuple[int, dict[str, JobDefinition], list[str]] | None = None

    def in_order(self) -> tuple[dict[str, JobDefinition], list[str]]:
        """Return the user jobs by name and their names in order, one snapshot (do not
        change them: the next call may hand out the same ones)."""
        store = self._store
        cached = self._kept
        if cached is not None:
            changes = store.job_changes(cached[0])  # the version and what changed: one read
            if changes.version == cached[0]:
                return cached[1], cached[2]
            if changes.names is not None:  # only the jobs that changed
                by_name, names = _changed(cached[1], cached[2], changes.names, changes.jobs)
                self._kept = (changes.version, by_name, names)
                return by_name, names
        # Read after the version: a change in between is seen at the next call.
        version = store.catalog_version()
        by_name = {job.name: job for job in store.jobs()}
        names = sorted(by_name)
        self._kept = (version, by_name, names)
        return by_name, names


def _changed(
    by_name: dict[str, JobDefinition],
    names: list[str],
    changed: set[str],
    found: list[JobDefinition],
) -> tuple[dict[str, JobDefinition], list[str]]:
    """Return copies of ``by_name`` and of ``names`` (in order) with the jobs ``changed`` as
    ``found`` has them (a changed job not found was dropped).

    Copies, since a caller may still hold the previous ones; each copy is one C-level pass,
    and the order is kept by bisection instead of sorting every job again (issue 28).
    """
    fresh = {job.name: job for job in found}
    by_name = by_name | fresh
    names = list(names)
    for name in changed - fresh.keys():
        if by_name.pop(name, None) is not None:
            del names[bisect.bisect_left(names, name)]
    for name in fresh:
        at = bisect.bisect_left(names, name)
        if at == len(names) or names[at] != name:
            names.insert(at, name)
    return by_name, names
