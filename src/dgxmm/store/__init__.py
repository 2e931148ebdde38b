"""The store: the database (SQLite by default, PostgreSQL by URL), its versioned catalog of
saved queries and user jobs with their effects, query-job runs, checkpoints, incremental
backups, system jobs and the workload sidecar. See ``docs/store.md``.
"""

from dgxmm.store.analysis import Analysis, Statement, StatementKind, analyze
from dgxmm.store.attic import AtticEntry
from dgxmm.store.backup_dir import BackupResult, RestoreResult
from dgxmm.store.catalog_file import ImportResult
from dgxmm.store.changes import ChangeEntry, record_change
from dgxmm.store.database import Dialect, reading, writing
from dgxmm.store.definitions import JOB_KEYS, JobAction, JobSpec, RunOn
from dgxmm.store.effects import AllowAll, Authorizer, Create, Execute, Request, Write
from dgxmm.store.instances import Instance, InstanceRole
from dgxmm.store.job_runs import JobRuns, RunRecord, Trigger
from dgxmm.store.journal import Change, JournalEntry, Subject
from dgxmm.store.params import ParamType
from dgxmm.store.protection import ProtectedTable, TableOwner
from dgxmm.store.records import JobDefinition, SavedQuery
from dgxmm.store.revival import Restored
from dgxmm.store.rollback import RollbackResult, RollbackStep
from dgxmm.store.schema import metadata
from dgxmm.store.store import Store, restore
from dgxmm.store.system_jobs import COMPACT, RUNS_PURGE, STATS_FLUSH, SYSTEM_JOB_NAMES
from dgxmm.store.user_jobs import NotScheduled, UserJobs

__all__ = [
    "COMPACT",
    "JOB_KEYS",
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
    "Trigger",
    "UserJobs",
    "Write",
    "analyze",
    "metadata",
    "reading",
    "record_change",
    "restore",
    "writing",
]
