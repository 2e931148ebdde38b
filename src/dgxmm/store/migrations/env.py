"""Alembic environment of the store: run only from ``Store.open``, which passes a connection.

There is no ``alembic.ini`` at run time: ``dgxmm.store.database.migrate`` builds the Alembic
``Config`` in code, points it at this folder and hands over a connection inside the
transaction that applies the migrations.
"""

from __future__ import annotations

from alembic import context

from dgxmm.store.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("dgxmm's migrations run from Store.open, which passes a connection")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
