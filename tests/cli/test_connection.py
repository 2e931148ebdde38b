"""How a command finds its server: --url, the data directory's server.json and admin-token,
or --offline; and that it never makes a data directory of its own."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from cli.clikit import Live, run
from support import free_port, start_serve


def test_it_creates_no_data_directory_when_run_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DGXMM_DATA", raising=False)
    asked = run("jobs", "list")
    assert asked.code == 1
    assert "no dgxmm server found" in asked.err
    assert str(tmp_path / "dgxmm-data") in asked.err
    offline = run("jobs", "list", "--offline")
    assert offline.code == 2
    assert offline.err.startswith("error: data: ")
    assert "does not exist" in offline.err
    assert list(tmp_path.iterdir()) == []  # no ./dgxmm-data, no database


def test_it_says_when_no_server_answers(tmp_path: Path) -> None:
    (tmp_path / "server.json").write_text(json.dumps({"url": f"http://127.0.0.1:{free_port()}"}))
    asked = run("queries", "list", "--data", str(tmp_path))
    assert asked.code == 1
    assert "no dgxmm server answers at http://127.0.0.1:" in asked.err


def test_it_refuses_a_wrong_or_missing_token_file(live: Live, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text("dgxmm_not-a-token\n")
    refused = run("jobs", "list", "--url", live.url, "--token-file", str(wrong))
    assert refused.code == 1
    assert "refused the token" in refused.err
    missing = run("jobs", "list", "--url", live.url, "--token-file", str(tmp_path / "nothing"))
    assert missing.code == 2
    assert missing.err.startswith("error: token_file: ")
    both = run("jobs", "list", "--url", live.url, "--offline")
    assert (both.code, both.err.strip()) == (2, "error: offline: give --url or --offline, not both")


def test_it_sends_a_data_directorys_token_only_to_its_own_server(
    live: Live, tmp_path: Path
) -> None:
    data = tmp_path / "elsewhere"
    data.mkdir()
    (data / "admin-token").write_text(live.token_file.read_text())
    (data / "server.json").write_text(json.dumps({"url": f"http://127.0.0.1:{free_port()}"}))
    other = run("jobs", "list", "--data", str(data), "--url", live.url)
    assert other.code == 1  # no token went to a server the data directory does not name
    assert "give --token-file" in other.err
    (data / "server.json").write_text(json.dumps({"url": live.url}))
    own = run("jobs", "list", "--data", str(data), "--url", live.url + "/")
    assert own.code == 0, own.err


def test_it_finds_a_served_data_directory_and_forgets_it_after_the_stop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    process, _ = start_serve(
        lambda ports: ["serve", "--data", str(data), "--port", str(ports[0]), "--time-zone", "UTC"]
    )
    try:
        assert json.loads((data / "server.json").read_text())["pid"] == process.pid
        defined = run("jobs", "define", "cp", "--schedule", "0 3 * * *", "--action",
                      "checkpoint", "--data", str(data))  # fmt: skip
        assert defined.code == 0, defined.err
        listed = run("jobs", "list", "--json", "--data", str(data))  # the admin-token of data
        assert "cp" in [job["name"] for job in listed.json()]
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
    assert not (data / "server.json").exists()
    after = run("jobs", "list", "--data", str(data))
    assert after.code == 1
    assert "holds no server.json" in after.err
    offline = run("jobs", "list", "--offline", "--data", str(data))
    assert offline.code == 0
    assert offline.out.splitlines()[1].startswith("cp ")
