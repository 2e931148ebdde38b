"""Where ``/`` leads without a fleet, and the login page's footer."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_home_opens_the_jobs_where_no_fleet_is_served(client: TestClient) -> None:
    answer = client.get("/", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/jobs")


def test_the_login_page_shows_no_empty_zone(client: TestClient) -> None:
    page = client.get("/login").text
    assert "the server's zone</option>" in page
    assert "()" not in page
