"""`dgxmm proxy` and `dgxmm deployments check` against a live server (issue 45)."""

from __future__ import annotations

from cli.clikit import Live
from support import standin_keys


def test_the_proxy_command_shows_no_address_and_the_models_without_a_proxy(live: Live) -> None:
    live.fleet.deployments.create(actor="user:a", **standin_keys("chat", aliases=["assistant"]))
    shown = live.cli("proxy")
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0].startswith("address: none: no proxy runs in this server")
    assert "--proxy-port" in lines[0]
    row = next(line for line in lines if line.startswith("chat-model"))
    assert row.split()[:4] == ["chat-model", "assistant", "chat", "stopped"]
    assert "refused in the last hour: 0" in shown.out
    assert "bodies held per deployment: 128 MiB" in shown.out
    answer = live.cli("proxy", "--json").json()
    assert (answer["address"], answer["models"][0]["deployment"]) == (None, "chat")


def test_the_check_command_answers_with_the_speed_or_a_dash(live: Live) -> None:
    made = live.fleet.deployments.create(actor="user:a", **standin_keys("checked"))
    stopped = live.cli("deployments", "check", "checked")
    assert stopped.code == 1  # a check never wakes or starts anything
    assert "stopped" in stopped.err
    live.fleet.deployer.start(made.id, actor="user:a")
    try:
        long = live.cli("deployments", "check", "checked", "--prompt", "Say hello")
        assert long.code == 0, long.err
        assert "straight to the server" in long.out
        assert "tokens/s" in long.out.splitlines()[-1]
        short = live.cli("deployments", "check", "checked", "--max-tokens", "3", "--json")
        assert (short.json()["tokens"], short.json()["tokens_per_s"]) == (3, None)
        shown = live.cli("deployments", "check", "checked", "--max-tokens", "3")
        assert shown.out.splitlines()[-1] == "speed: - (3 tokens)"
        wrong = live.cli("deployments", "check", "checked", "--max-tokens", "0")
        assert wrong.code == 2
        assert wrong.err.startswith("error: max_tokens")
    finally:
        live.fleet.deployer.stop(made.id, actor="user:a")
    assert live.cli("deployments", "check", "ghost").code == 2
