"""A job's page: its definition, next times with DST marks, its runs; HTML errors for pages."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from support import at

from dgxmm.clock import ManualClock
from dgxmm.server import Host
from dgxmm.store import Trigger

HTML = {"Accept": "text/html"}


def test_it_shows_a_jobs_definition_and_runs(client: TestClient, host: Host) -> None:
    host.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    host.run_now("cp")
    host.run_now("cp")
    page = client.get("/jobs/cp", headers=HTML)
    assert page.status_code == 200
    assert '<code class="schedule">0 3 * * *</code>' in page.text
    assert page.text.count('data-trigger="manual" data-outcome="succeeded"') == 2
    assert "/jobs/new?edit=cp" in page.text


def test_it_pages_back_through_a_jobs_runs(client: TestClient, host: Host) -> None:
    host.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    for _ in range(3):
        host.run_now("cp")
    first = client.get("/jobs/cp", params={"limit": 2}, headers=HTML).text
    ids = [int(i) for i in re.findall(r'data-run="(\d+)"', first)]
    assert len(ids) == 2
    assert ids[0] > ids[1]  # newest first
    older = re.search(r'href="/jobs/cp\?before=(\d+)" id="older-runs"', first)
    assert older is not None
    rest = client.get(f"/jobs/cp?before={older.group(1)}&limit=2", headers=HTML).text
    assert len(re.findall(r'data-run="(\d+)"', rest)) == 1
    assert 'id="older-runs"' not in rest


def test_it_marks_the_next_times_after_the_clocks_change(
    client: TestClient, host: Host, clock: ManualClock
) -> None:
    # Berlin moves to winter time on 2026-10-25; from 2026-10-20 the 8 next 03:00s cross it.
    clock.set(at("2026-10-19T20:00:00+02:00"))
    host.store.define_job(name="night", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    page = client.get("/jobs/night", headers=HTML).text
    assert 'data-at="2026-10-25T03:00:00+01:00" data-dst="true"' in page
    assert "after the clocks change (UTC+0100)" in page
    assert 'data-at="2026-10-24T03:00:00+02:00">' in page  # before: no mark


def test_it_marks_the_next_times_of_a_job_in_its_own_zone(
    client: TestClient, host: Host, clock: ManualClock
) -> None:
    # New York moves to summer time on 2026-03-08, three weeks before the server's Berlin.
    clock.set(at("2026-03-05T12:00:00-05:00"))
    host.store.define_job(
        name="ny", schedule="30 2 * * *", action="checkpoint", time_zone="America/New_York"
    )
    host.sync()
    page = client.get("/jobs/ny", headers=HTML).text
    assert '<dd class="job-zone">America/New_York' in page
    assert "(its own; the server's is Europe/Berlin)" in page
    assert 'data-at="2026-03-07T02:30:00-05:00">' in page  # before: no mark
    assert 'data-at="2026-03-08T03:00:00-04:00" data-dst="true"' in page
    assert "moved by a DST gap" in page
    # Shown in the display zone (the server's), and as the job's own wall time beside it.
    wall = '<span class="muted job-wall">2026-03-08 03:00 in America/New_York'
    assert (
        f'<time datetime="2026-03-08T08:00:00+01:00">2026-03-08 08:00:00</time></span> {wall}'
        in page
    )
    listed = client.get("/jobs", headers=HTML).text
    assert '<span class="job-zone">in America/New_York</span>' in listed


def test_an_unknown_job_is_an_html_404_in_a_browser_and_json_in_the_api(
    client: TestClient,
) -> None:
    page = client.get("/jobs/nope", headers=HTML)
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert 'id="error-page" data-status="404"' in page.text
    assert "nope" in page.text
    answer = client.get("/api/jobs/history", params={"name": "nope"}, headers=HTML)
    assert answer.status_code == 404
    assert answer.json()["error"] == "not_found"


def test_an_unknown_page_is_an_html_404(client: TestClient) -> None:
    page = client.get("/no-such-page", headers=HTML)
    assert page.status_code == 404
    assert "there is no page /no-such-page" in page.text
    assert client.get("/api/no-such", headers=HTML).json()["error"] == "not_found"


def test_it_shows_a_jobs_catch_up_and_overlap_and_the_form_keeps_them(
    client: TestClient, host: Host
) -> None:
    host.store.define_job(
        name="cp", schedule="0 3 * * *", action="checkpoint",
        catchup_window_s=3600, coalesce="all", overlap="buffer_one",
    )  # fmt: skip
    host.sync()
    page = client.get("/jobs/cp", headers=HTML).text
    assert "coalesce all: the times missed within 3600 s" in page
    assert '<dd class="job-overlap">buffer_one</dd>' in page
    form = client.get("/jobs/new?edit=cp", headers=HTML).text
    assert 'id="catchup_window_s" inputmode="decimal" value="3600"' in form
    assert '<option value="all" selected>all</option>' in form
    assert '<option value="buffer_one" selected>buffer_one</option>' in form
    assert "the latest time missed within an hour" in form  # a preset
    host.store.define_job(name="plain", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    plain = client.get("/jobs/plain", headers=HTML).text
    assert "skipped whole, as the spec has it" in plain
    assert '<dd class="job-overlap">skip</dd>' in plain


def test_it_offers_an_admin_a_cancel_for_a_run_under_way_and_shows_who_cancelled(
    client: TestClient, viewer: TestClient, host: Host, clock: ManualClock
) -> None:
    host.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    run = host.scheduler.start_now("cp", clock.now_us())
    run_id = host.store.runs.claim(run, Trigger.MANUAL)
    page = client.get("/jobs/cp", headers=HTML).text
    assert f'data-action="cancel-run" data-run-id="{run_id}"' in page
    assert 'data-action="cancel-run"' not in viewer.get("/jobs/cp", headers=HTML).text
    assert run_id is not None
    host.store.runs.request_cancel(run_id, "user:alice")
    assert "(cancel asked by user:alice)" in client.get("/jobs/cp", headers=HTML).text
    run.cancel("user:alice")
    result = run.run()
    host.store.runs.finish(run_id, result)
    host.scheduler.finish(result)
    page = client.get("/jobs/cp", headers=HTML).text
    assert (
        '<span class="outcome cancelled">cancelled</span> <span class="muted">by user:alice</span>'
        in page
    )


def test_the_job_list_draws_the_rows_asked_for_by_name_alone(
    client: TestClient, host: Host
) -> None:
    for name in ("a", "b", "c"):
        host.store.define_job(name=name, schedule="0 3 * * *", action="checkpoint")
    host.sync()
    page = client.get("/jobs", params={"row": ["c", "a", "gone"]}, headers=HTML)
    assert page.status_code == 200
    # Drawn as the list draws them (one way to draw a row); a name that is no job is left out.
    assert re.findall(r'<tr data-job="([^"]+)"', page.text) == ["c", "a"]
    whole = client.get("/jobs", headers=HTML).text
    row_a = re.search(r'<tr data-job="a".*?</tr>', whole, re.S)
    assert row_a is not None
    assert row_a.group(0) in page.text
    too_many = client.get("/jobs", params={"row": [f"j{i}" for i in range(101)]}, headers=HTML)
    assert too_many.status_code == 400
    assert "at most 100 rows" in too_many.text
