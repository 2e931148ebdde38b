"""The store's tables, all on one SQLAlchemy ``MetaData`` named ``metadata``.

Later packages define their own ``Table`` objects on this same ``metadata`` and add their
tables as further Alembic revisions in ``store/migrations/versions/``. The revision that
creates a table of dgxmm's also records it in ``protected_tables``: saved queries may read it
but never write it, whichever process defines or runs them (``catalog/protection.py``).

Instants are integer microseconds since the Unix epoch (UTC); JSON is stored as text so
that both databases keep it byte for byte as written.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)

__all__ = [
    "NAME_LENGTH",
    "catalog_attic",
    "catalog_jobs",
    "catalog_journal",
    "catalog_queries",
    "change_keys",
    "change_log",
    "change_versions",
    "instances",
    "job_run_rows",
    "job_runs",
    "metadata",
    "protected_tables",
    "settings",
    "store_state",
]

NAME_LENGTH = 100

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# SQLite makes only an INTEGER PRIMARY KEY an alias of the rowid (and so self-numbering).
_Id = BigInteger().with_variant(Integer(), "sqlite")

store_state = Table(
    "store_state",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", String(32), nullable=False),
    Column("catalog_version", BigInteger, nullable=False),
    CheckConstraint("id = 1", name="single_row"),
)

catalog_queries = Table(
    "catalog_queries",
    metadata,
    Column("name", String(NAME_LENGTH), primary_key=True),
    Column("params", Text, nullable=False),  # JSON: {"name": "type"}
    Column("body", Text, nullable=False),
    Column("description", Text),
    Column("version", BigInteger, nullable=False),  # catalog version of the last change
    Column("defined_by", String(200)),
    Column("defined_at", BigInteger, nullable=False),
)

catalog_jobs = Table(
    "catalog_jobs",
    metadata,
    Column("name", String(NAME_LENGTH), primary_key=True),
    Column("definition", Text, nullable=False),  # JSON, exactly as written
    Column("effects", Text, nullable=False),  # JSON list of the granted requests
    Column("query_name", String(NAME_LENGTH), index=True),  # the saved query it names, if any
    Column("version", BigInteger, nullable=False),
    Column("defined_by", String(200)),
    Column("defined_at", BigInteger, nullable=False),
)

catalog_journal = Table(
    "catalog_journal",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("version", BigInteger, nullable=False, index=True),
    Column("at_us", BigInteger, nullable=False),
    Column("actor", String(200)),
    Column("subject", String(20), nullable=False),  # query, job, setting
    Column("name", String(200), nullable=False),
    Column("change", String(20), nullable=False),  # define, replace, drop, enable, ...
    Column("before", Text),  # JSON or NULL
    Column("after", Text),  # JSON or NULL
)

settings = Table(
    "settings",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("value", Text, nullable=False),  # JSON
    Column("version", BigInteger, nullable=False),
    Column("updated_by", String(200)),
    Column("updated_at", BigInteger, nullable=False),
)

# One counter per live topic (``store/versions.py``), bumped in the transaction of a change.
change_versions = Table(
    "change_versions",
    metadata,
    Column("topic", String(32), primary_key=True),
    Column("version", BigInteger, nullable=False),
)

# Which rows a topic's change touched, by the version it made (``store/versions.py``): a live
# page fetches those rows alone. A window of the newest versions is kept (migration 0026).
change_keys = Table(
    "change_keys",
    metadata,
    Column("topic", String(32), primary_key=True),
    Column("version", BigInteger, primary_key=True),
    Column("key", String(200), primary_key=True),
)

change_log = Table(
    "change_log",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("at_us", BigInteger, nullable=False),
    Column("job", String(NAME_LENGTH), index=True),  # the job whose run committed it, if any
    Column("actor", String(200)),
    Column("summary", Text, nullable=False),
)

protected_tables = Table(
    "protected_tables",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("owner", String(20), nullable=False),  # protection.TableOwner
    Column("why", Text, nullable=False),
)

catalog_attic = Table(
    "catalog_attic",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("kind", String(20), nullable=False),  # query, job (journal.Subject)
    Column("name", String(NAME_LENGTH), nullable=False, index=True),
    Column("item", Text, nullable=False),  # JSON: as the journal writes the thing
    Column("defined_version", BigInteger, nullable=False),  # catalog version of its definition
    Column("defined_by", String(200)),
    Column("defined_at", BigInteger, nullable=False),
    Column("dropped_version", BigInteger, nullable=False),  # the change that moved it here
    Column("dropped_by", String(200)),
    Column("dropped_at", BigInteger, nullable=False),
    Column("why", Text, nullable=False),  # dropped, replaced by a rollback, ...
)

# One row per run of any job, claimed by inserting it (``runs/job_runs.py``). A scheduled run's
# (job, scheduled time) is unique: of several instances that tick the same minute, the one
# whose insert lands runs it; the others cannot insert and do not.
job_runs = Table(
    "job_runs",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("job", String(NAME_LENGTH), nullable=False),
    Column("kind", String(10), nullable=False),  # jobs.JobKind
    Column("job_group", String(NAME_LENGTH)),  # the engine's group: one run of it at a time
    Column("trigger", String(10), nullable=False),  # runs/records.py: Trigger
    Column("scheduled_at", BigInteger, nullable=False),
    Column("started_at", BigInteger, nullable=False),
    Column("finished_at", BigInteger),  # NULL while under way
    Column("outcome", String(20)),  # jobs.Outcome; NULL while under way
    Column("error", Text),
    Column("public_error", Text),
    Column("result", Text),  # what the action returned, as text
    Column("instance", String(100), nullable=False),
    # 1 for a time's first run, 2 and up for its retries (trigger 'retry'); NULL in rows an
    # older dgxmm wrote, which were all first runs.
    Column("attempt", Integer),
    # A cancel: who asked for it (any instance writes it; the one running the run polls for
    # it), and who cancelled the run, written with its end (outcome 'cancelled').
    Column("cancel_requested_by", String(200)),
    Column("cancelled_by", String(200)),
    Index(
        "uq_job_runs_scheduled",
        "job",
        "scheduled_at",
        unique=True,
        sqlite_where=text("\"trigger\" = 'schedule'"),
        postgresql_where=text("\"trigger\" = 'schedule'"),
    ),
    Index("ix_job_runs_job_id", "job", "id"),
    Index("ix_job_runs_unfinished", "finished_at", "instance"),
    # The Runs page's order, newest first, of every job and of one (migration 0025).
    Index("ix_job_runs_started", "started_at", "id"),
    Index("ix_job_runs_job_started", "job", "started_at", "id"),
)

# The first rows a query job's run returned, kept beside its row in ``job_runs``
# (``runs/kept_rows.py``): bounded in rows and bytes, deleted with the run by ``runs_purge``.
# A table of its own, so that a list of runs never reads them.
job_run_rows = Table(
    "job_run_rows",
    metadata,
    Column("run_id", _Id, primary_key=True, autoincrement=False),  # job_runs.id
    Column("body", Text, nullable=False),  # JSON: columns, rows, returned, cut
)

# The dgxmm processes on this database: servers (the ticker's holder and its standbys) and
# the CLI while it runs a job (``runs/instances.py``).
instances = Table(
    "instances",
    metadata,
    Column("id", String(100), primary_key=True),
    Column("role", String(20), nullable=False),  # instances.Role
    Column("started_at", BigInteger, nullable=False),
    Column("role_since", BigInteger, nullable=False),
    Column("last_seen", BigInteger, nullable=False),
    Column("stopped_at", BigInteger),  # set by a clean stop; NULL while it may be alive
    Column("place", Text, nullable=False),  # host name, process id, address
)
