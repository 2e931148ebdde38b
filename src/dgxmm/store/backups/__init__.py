"""Backups, restores and the store's other file operations, on either database.

- ``directory``: a backup directory's layout (marker, one sub-directory per run, manifests);
- ``sqlite`` / ``wal`` / ``pagelog``: SQLite's page-level backups, full then incremental,
  from the tracked WAL checkpoint and the dirty-page log it keeps;
- ``postgresql`` / ``pg_tables``: PostgreSQL's, per table from one exported snapshot, and
  its tables copied out and in with COPY, hashed, in foreign-key order;
- ``restore``: a backup directory restored to a new place, and the refusals of paths;
- ``maintenance``: checkpoint, backup and compact, each in the database's own way.

It imports nothing of ``store/catalog`` or ``store/runs``: a backup copies the database, it
does not read what is in it (``tests/test_layers.py``). The store's public names are
re-exported once, by ``dgxmm.store``.
"""

__all__: list[str] = []
