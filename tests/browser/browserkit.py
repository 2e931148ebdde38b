"""What the browser tests share besides fixtures (import: `from browser.browserkit import Live`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dgxmm.server import Host
from dgxmm.store import Store


@dataclass
class Live:
    """A served app: its URL, an admin token, its host and store."""

    base: str
    token: str
    host: Host
    store: Store


def log_in(page: Any, token: str, then: str | None = None) -> None:
    """Log ``page`` in through the login form with ``token``; wait until it is on ``then``
    (``/login?next=``), or on the page ``/`` leads to without one (``home``: ``/deployments``
    where a fleet is served, else ``/jobs``)."""
    page.goto("/login" if then is None else f"/login?next={then}")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url(f"**{then}" if then is not None else lambda url: "/login" not in url)
