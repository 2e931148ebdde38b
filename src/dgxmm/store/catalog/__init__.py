"""The catalog: saved queries and user jobs, versioned, journaled, with their rights.

- ``catalog`` / ``rows``: ``Catalog``, every change in one write transaction under the next
  version, over ``CatalogRows``: each query's and job's row checked, written with its
  journal row or dropped to the attic, inside the caller's transaction;
- ``definitions`` / ``params`` / ``analysis``: a job's keys checked, a query's typed
  parameters, what a query's SQL does (parsed with sqlglot);
- ``effects`` / ``protection``: the rights a job is granted when it is defined, and the tables
  no saved query may write;
- ``records`` / ``journal``: the stored query and job, the version, the journal, the settings;
- ``attic`` / ``revival`` / ``rollback``: what was dropped or replaced, bringing it back, the
  catalog as it was at an earlier version;
- ``file``: the catalog as one JSON document, to export and import;
- ``bounds``: what a stored value may be (instants, versions, depth, size, text), so that a
  file from anywhere cannot hold what a page, an export or a restore cannot take.

It imports nothing of ``store/backups`` or ``store/runs`` (``tests/test_layers.py``). The
store's public names are re-exported once, by ``dgxmm.store``; a room has no face of its own.
"""

__all__: list[str] = []
