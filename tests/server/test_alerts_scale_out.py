"""Two `dgxmm serve` processes on one PostgreSQL database: each alert is sent once.

Both share one sealing key (``DGXMM_ALERTS_KEY``). Test messages are asked of both at once;
the receiver gets each exactly once, and the log shows which instance sent each.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from alerts.alertkit import Receiver
from server.test_serve import ALLOW_PRIVATE, serve, stop
from support import wait_for

KEY = {"DGXMM_ALERTS_KEY": "ab" * 32}


@pytest.mark.postgres
@pytest.mark.slow
def test_two_servers_send_each_message_once(tmp_path: Path, pg_url: str) -> None:
    first, first_port = serve(tmp_path / "a", "--db", pg_url, ALLOW_PRIVATE, env=KEY)
    second, second_port = serve(tmp_path / "b", "--db", pg_url, ALLOW_PRIVATE, env=KEY)
    token = (tmp_path / "a" / "admin-token").read_text().strip()
    clients = [
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30,
                     headers={"Authorization": f"Bearer {token}"})
        for port in (first_port, second_port)
    ]  # fmt: skip
    try:
        with Receiver() as receiver:
            made = clients[0].post(
                "/api/alerts/channels", json={"name": "ops", "url": receiver.url}
            )
            assert made.status_code == 200, made.text
            receiver.secret = made.json()["secret"]
            channel = made.json()["channel"]["id"]

            def ask(client: httpx.Client) -> None:
                for _ in range(10):
                    assert client.post(f"/api/alerts/channels/{channel}/test").status_code == 200

            askers = [threading.Thread(target=ask, args=(c,)) for c in clients]
            for asker in askers:
                asker.start()
            for asker in askers:
                asker.join(timeout=60)
            wait_for(lambda: len(receiver.requests()) >= 20, "20 test messages", timeout_s=60)

            def all_sent() -> list[dict[str, Any]] | None:
                rows = clients[1].get("/api/alerts/deliveries").json()["deliveries"]
                sent = [d for d in rows if d["state"] == "sent"]
                return sent if len(sent) == 20 else None

            log = wait_for(all_sent, "20 sent deliveries", timeout_s=30)
            time.sleep(0.5)  # a second send of any, were there one, would have come by now
            got = receiver.requests()
    finally:
        for client in clients:
            client.close()
        stop(second)
        stop(first)
    assert len(got) == 20
    assert len({r.body["id"] for r in got}) == 20
    assert all(r.signed for r in got)
    assert Counter(len(d["log"]) for d in log) == {1: 20}  # one attempt each
