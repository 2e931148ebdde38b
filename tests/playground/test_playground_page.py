"""GET /playground without its files: the page names each missing file and the fetch command."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dgxmm.server import Host, Services, Tokens, create_app
from dgxmm.server.pages import playground
from dgxmm.store import Store


def test_it_says_what_is_missing_and_the_command_that_fetches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(playground, "PLAYGROUND_FILES", tmp_path)
    (tmp_path / "pyodide.mjs").write_text("")
    store = Store.open(tmp_path / "dgxmm.db")
    host = Host(store, time_zone="Europe/Berlin")
    with TestClient(create_app(Services(host=host, tokens=Tokens(store.engine, store.clock)))) as c:
        page = c.get("/playground")
    store.close()
    assert page.status_code == 200
    for name in ("pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "manifest.json"):
        assert f"<code>{name}" in page.text
    assert "<code>pyodide.mjs</code>" not in page.text
    assert '<code id="fetch-command">scripts/playground-files</code>' in page.text
    assert "playground.js" not in page.text  # nothing starts without its files
