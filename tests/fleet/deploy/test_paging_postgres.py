"""The lists' paging on PostgreSQL: the same tests as on SQLite, each item once while items
are added and dropped between pages, through the API and the pages.

The tests are the SQLite modules' own, collected here again with this module's ``store``
(a fresh database on the session's throwaway cluster) in place of the SQLite one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet.deploy import test_api_pages as api_pages
from fleet.deploy import test_deployments_page_paging as deployments_page
from fleet.deploy import test_insights_page_paging as insights_page
from server.api import test_jobs_list_page as jobs_page
from server.api import test_jobs_pages as api_jobs

from dgxmm.clock import ManualClock
from dgxmm.errors import Busy
from dgxmm.store import Store

pytestmark = pytest.mark.postgres

test_api_deployments_paging = api_pages.test_deployments_page_by_name_each_once_while_one_is_added
test_api_deployments_filters = api_pages.test_deployments_filter_by_state_and_node
test_api_insights_and_audit_paging = api_pages.test_insights_and_audit_page_newest_first_each_once
test_api_jobs_come_and_go = (
    api_jobs.test_every_job_kept_throughout_is_given_exactly_once_while_jobs_come_and_go
)
test_api_jobs_paging = api_jobs.test_an_unfiltered_page_is_found_without_listing_every_job
test_page_deployments = (
    deployments_page.test_it_pages_by_name_each_deployment_once_while_some_are_added_and_dropped
)
test_page_insights = insights_page.test_it_pages_back_each_insight_once_while_new_ones_come
test_page_jobs = jobs_page.test_it_pages_each_job_once_while_jobs_come_and_go

__all__ = [
    "test_api_deployments_filters",
    "test_api_deployments_paging",
    "test_api_insights_and_audit_paging",
    "test_api_jobs_come_and_go",
    "test_api_jobs_paging",
    "test_page_deployments",
    "test_page_insights",
    "test_page_jobs",
]


@pytest.fixture
def store(pg_url: str, tmp_path: Path, clock: ManualClock) -> Iterator[Store]:
    opened = Store.open(pg_url, clock=clock, data_dir=tmp_path)
    yield opened
    try:
        opened.close()
    except Busy:
        opened.flush_stats()
