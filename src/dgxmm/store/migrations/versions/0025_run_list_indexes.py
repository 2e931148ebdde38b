"""The Runs page's order: job runs and deployment actions by time, newest first.

Issue 28. Without these, every page of ``/runs`` (and each live refetch of its newest page)
read all of ``job_runs`` and of ``deployment_events`` and sorted them.

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_job_runs_started", "job_runs", ["started_at", "id"])
    op.create_index("ix_job_runs_job_started", "job_runs", ["job", "started_at", "id"])
    op.create_index("ix_deployment_events_at", "deployment_events", ["at_us", "id"])


def downgrade() -> None:
    op.drop_index("ix_deployment_events_at", table_name="deployment_events")
    op.drop_index("ix_job_runs_job_started", table_name="job_runs")
    op.drop_index("ix_job_runs_started", table_name="job_runs")
