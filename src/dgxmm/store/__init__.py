"""The store: the database (SQLite by default, PostgreSQL by URL) and everything kept in it.

- ``store`` / ``catalog_face``: ``Store``, the one facade, and ``restore``; the facade's
  methods on the catalog (queries, jobs, journal, settings, the file, the attic, rollback);
- ``database`` / ``schema`` / ``files`` / ``migrations/``: the engine and its transactions,
  the tables, durable file writes, the Alembic revisions;
- ``catalog/``: saved queries and user jobs, versioned and journaled, their effects, the
  attic, rollback and the catalog file;
- ``backups/``: full and incremental backups (SQLite pages, PostgreSQL tables), restore,
  checkpoint and compact;
- ``runs/``: the system and user jobs, query-job runs, every run's row and the ticker's
  lease, the overrides and the workload sidecar;
- ``versions``: the live topics' change counters (``GET /api/changes``).

Other layers import the store's names from here, never from its rooms. See ``docs/store.md``.
"""

from dgxmm.store.backups.directory import BackupResult, RestoreResult
from dgxmm.store.catalog.analysis import Analysis, Statement, StatementKind, analyze
from dgxmm.store.catalog.attic import AtticEntry
from dgxmm.store.catalog.bounds import json_depth
from dgxmm.store.catalog.definitions import JOB_KEYS, JobAction, JobSpec, RunOn
from dgxmm.store.catalog.effects import AllowAll, Authorizer, Create, Execute, Request, Write
from dgxmm.store.catalog.file import ImportResult
from dgxmm.store.catalog.journal import Change, JournalEntry, Subject
from dgxmm.store.catalog.params import ParamType
from dgxmm.store.catalog.protection import ProtectedTable, TableOwner
from dgxmm.store.catalog.records import JobDefinition, SavedQuery
from dgxmm.store.catalog.revival import Restored
from dgxmm.store.catalog.rollback import RollbackResult, RollbackStep
from dgxmm.store.database import Dialect, reading, writing
from dgxmm.store.runs.changes import ChangeEntry, record_change
from dgxmm.store.runs.instances import Instance, InstanceRole
from dgxmm.store.runs.job_runs import MAX_RUNS_PAGE, JobRuns
from dgxmm.store.runs.kept_rows import KEPT_BYTES, KEPT_ROWS, KeptRows
from dgxmm.store.runs.records import RunRecord, Trigger
from dgxmm.store.runs.system_jobs import COMPACT, RUNS_PURGE, STATS_FLUSH, SYSTEM_JOB_NAMES
from dgxmm.store.runs.user_jobs import NotScheduled, UserJobs
from dgxmm.store.schema import metadata
from dgxmm.store.store import Store, restore
from dgxmm.store.versions import ChangeVersions, Topic

__all__ = [
    "COMPACT",
    "JOB_KEYS",
    "KEPT_BYTES",
    "KEPT_ROWS",
    "MAX_RUNS_PAGE",
    "RUNS_PURGE",
    "STATS_FLUSH",
    "SYSTEM_JOB_NAMES",
    "AllowAll",
    "Analysis",
    "AtticEntry",
    "Authorizer",
    "BackupResult",
    "Change",
    "ChangeEntry",
    "ChangeVersions",
    "Create",
    "Dialect",
    "Execute",
    "ImportResult",
    "Instance",
    "InstanceRole",
    "JobAction",
    "JobDefinition",
    "JobRuns",
    "JobSpec",
    "JournalEntry",
    "KeptRows",
    "NotScheduled",
    "ParamType",
    "ProtectedTable",
    "Request",
    "RestoreResult",
    "Restored",
    "RollbackResult",
    "RollbackStep",
    "RunOn",
    "RunRecord",
    "SavedQuery",
    "Statement",
    "StatementKind",
    "Store",
    "Subject",
    "TableOwner",
    "Topic",
    "Trigger",
    "UserJobs",
    "Write",
    "analyze",
    "json_depth",
    "metadata",
    "reading",
    "record_change",
    "restore",
    "writing",
]
