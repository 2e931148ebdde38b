"""Login CSRF: only our own login page, or a program, may set the login cookie."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from dgxmm.server import Host, Services, Tokens, create_app


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "http://evil.example"}, id="foreign-origin"),
        pytest.param({"Origin": "null"}, id="opaque-origin"),
        pytest.param({"Origin": "http://testserver.evil.example"}, id="lookalike-origin"),
        # The same host and port under another scheme is another origin (RFC 6454).
        pytest.param({"Origin": "https://testserver"}, id="other-scheme"),
        pytest.param({"Sec-Fetch-Site": "cross-site"}, id="no-origin-cross-site"),
        pytest.param({"Sec-Fetch-Site": "same-site"}, id="no-origin-sibling-site"),
    ],
)
def test_it_refuses_a_login_from_another_sites_page(
    host: Host, tokens: Tokens, admin_token: str, headers: dict[str, str]
) -> None:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as browser:
        response = browser.post(
            "/login", data={"token": admin_token}, headers=headers, follow_redirects=False
        )
        assert response.status_code == 403
        assert "set-cookie" not in response.headers
        assert "another site" in response.json()["message"]
        assert browser.cookies.get("dgxmm_token") is None


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "http://testserver"}, id="our-own-page"),
        pytest.param({"Sec-Fetch-Site": "same-origin"}, id="same-origin-fetch"),
        pytest.param({}, id="a-program"),
    ],
)
def test_it_logs_in_from_our_own_page_or_a_program(
    host: Host, tokens: Tokens, admin_token: str, headers: dict[str, str]
) -> None:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as browser:
        response = browser.post(
            "/login", data={"token": admin_token}, headers=headers, follow_redirects=False
        )
        assert response.status_code == 303
        assert "httponly" in response.headers["set-cookie"].lower()


def _logged_in(browser: TestClient, token: str) -> None:
    response = browser.post("/login", data={"token": token}, follow_redirects=False)
    assert response.status_code == 303, response.text
    assert browser.cookies.get("dgxmm_token") == token


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "http://evil.example"}, id="foreign-origin"),
        pytest.param({"Origin": "null"}, id="opaque-origin"),
        pytest.param({"Origin": "https://testserver"}, id="other-scheme"),
        pytest.param({"Sec-Fetch-Site": "cross-site"}, id="no-origin-cross-site"),
    ],
)
def test_it_refuses_a_logout_from_another_sites_page(
    host: Host, tokens: Tokens, admin_token: str, headers: dict[str, str]
) -> None:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as browser:
        _logged_in(browser, admin_token)
        response = browser.post("/logout", headers=headers, follow_redirects=False)
        assert response.status_code == 403
        assert "set-cookie" not in response.headers  # the cookie is not cleared
        assert "another site" in response.json()["message"]
        assert browser.get("/jobs", headers={"Accept": "text/html"}).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "http://testserver"}, id="our-own-page"),
        pytest.param({}, id="a-program"),
    ],
)
def test_it_logs_out_from_our_own_page_or_a_program(
    host: Host, tokens: Tokens, admin_token: str, headers: dict[str, str]
) -> None:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as browser:
        _logged_in(browser, admin_token)
        response = browser.post("/logout", headers=headers, follow_redirects=False)
        assert (response.status_code, response.headers["location"]) == (303, "/login")
        assert browser.cookies.get("dgxmm_token") is None
        page = browser.get("/jobs", headers={"Accept": "text/html"}, follow_redirects=False)
        assert page.status_code == 303  # back to the login page


def test_it_takes_the_scheme_it_is_served_under_as_its_own(
    host: Host, tokens: Tokens, admin_token: str
) -> None:
    app = create_app(Services(host=host, tokens=tokens))
    with TestClient(app, base_url="https://testserver") as browser:
        for origin, status in (("https://testserver", 303), ("http://testserver", 403)):
            response = browser.post(
                "/login",
                data={"token": admin_token},
                headers={"Origin": origin},
                follow_redirects=False,
            )
            assert response.status_code == status, origin
