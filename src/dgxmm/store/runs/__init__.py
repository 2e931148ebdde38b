"""Runs: the jobs a store brings and what their runs leave behind.

- ``system_jobs`` / ``user_jobs`` / ``overrides``: the built-in jobs, the catalog's jobs as the
  engine schedules them, the system jobs' switches and schedules kept in the database;
- ``query_runs`` / ``guards`` / ``changes`` / ``kept_rows``: a query job's run within its
  effects and limits, the database's own guards on it (SQLite's authorizer, PostgreSQL's
  written tables, the deadline's watch), the change log that names it, and the first rows it
  returned, kept with its run;
- ``job_runs`` / ``records`` / ``instances`` / ``running``: every run's row (claimed by
  inserting it), a run as read back (``RunRecord``, its ``Trigger``), the processes on one
  store and the ticker's lease, the user jobs under way here;
- ``sidecar``: the workload statistics in a file beside the database.

It may read the catalog (a run checks the job's query and effects); it imports nothing of
``store/backups`` (``tests/test_layers.py``). The store's public names are re-exported once,
by ``dgxmm.store``.
"""

__all__: list[str] = []
