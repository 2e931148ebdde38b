"""What the browser tests share besides fixtures (import: `from browser.browserkit import Live`)."""

from __future__ import annotations

from dataclasses import dataclass

from dgxmm.server import Host
from dgxmm.store import Store


@dataclass
class Live:
    """A served app: its URL, an admin token, its host and store."""

    base: str
    token: str
    host: Host
    store: Store
