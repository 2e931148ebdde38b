"""A job's page: its definition, next times with DST marks, its runs; HTML errors for pages."""

from __future__ import annotations

from fastapi.testclient import TestClient
from support import at

from dgxmm.clock import ManualClock
from dgxmm.server import Host

HTML = {"Accept": "text/html"}


def test_it_shows_a_jobs_definition_and_runs(client: TestClient, host: Host) -> None:
    host.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    host.run_now("cp")
    host.run_now("cp")
    page = client.get("/jobs/cp", headers=HTML)
    assert page.status_code == 200
    assert '<code class="schedule">0 3 * * *</code>' in page.text
    assert 'data-count="2" data-failures="0"' in page.text
    assert "/jobs/new?edit=cp" in page.text


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
