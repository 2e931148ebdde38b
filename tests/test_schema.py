"""The migrations build exactly the tables the code declares (both ways, every column)."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

import dgxmm.alerts.tables
import dgxmm.decider.tables
import dgxmm.fleet.deployments.tables
import dgxmm.server.access.tables  # noqa: F401  (each registers its tables on the metadata)
from dgxmm.store import Store, metadata


def test_it_migrates_to_the_declared_schema(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "dgxmm.db")
    try:
        with store.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            differences = compare_metadata(context, metadata)
    finally:
        store.close()
    assert differences == []
