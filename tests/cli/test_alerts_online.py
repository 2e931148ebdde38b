"""`dgxmm alerts` against a live server, its alerts thread sending to a real receiver."""

from __future__ import annotations

from alerts.alertkit import Receiver
from cli.clikit import Live

from dgxmm.alerts import KEY_FILE


def test_it_adds_a_channel_tests_it_and_shows_the_log(live: Live) -> None:
    with Receiver(fail_first=1) as receiver:
        made = live.cli("alerts", "add-channel", "ops", receiver.url, "--format", "slack", "--json")
        assert made.code == 0, made.err
        receiver.secret = made.json()["secret"]
        listed = live.cli("alerts", "channels")
        assert receiver.secret not in listed.out
        assert listed.out.splitlines()[1].split()[1:3] == ["ops", "slack"]
        failed = live.cli("alerts", "test", "ops")  # the receiver answers 500 first
        assert failed.code == 1
        assert "answered 500" in failed.out
        # A second test goes through.
        sent = live.cli("alerts", "test", "ops")
        assert sent.code == 0, sent.out
        assert "sent to ops: 200" in sent.out
    assert all(r.signed for r in receiver.requests())
    assert receiver.requests()[-1].body["text"].startswith("[dgxmm] TEST")
    log = live.cli("alerts", "log")
    assert log.out.splitlines()[0].split()[:5] == ["ID", "MADE", "CHANNEL", "KIND", "STATE"]
    assert "retried:500" in log.out
    assert "sent:200" in log.out


def test_it_rotates_the_sealing_key_and_the_channels_go_on_working(live: Live) -> None:
    with Receiver() as receiver:
        made = live.cli("alerts", "add-channel", "ops", receiver.url, "--json")
        receiver.secret = made.json()["secret"]
        key_before = (live.data / KEY_FILE).read_text()
        rotated = live.cli("alerts", "rotate-key")
        assert rotated.code == 0, rotated.out + rotated.err
        assert "1 channel sealed again" in rotated.out
        assert (live.data / KEY_FILE).read_text() != key_before
        sent = live.cli("alerts", "test", "ops")
        assert sent.code == 0, sent.out
    [got] = receiver.requests()
    assert got.signed  # the same secret, opened under the new key


def test_it_adds_and_removes_a_rule(live: Live) -> None:
    with Receiver() as receiver:
        assert live.cli("alerts", "add-channel", "ops", receiver.url).code == 0
    made = live.cli("alerts", "add-rule", "refusals", "proxy_refused", "--channel", "ops",
                    "--threshold", "5", "--minutes", "10")  # fmt: skip
    assert made.code == 0, made.out + made.err
    rules = live.cli("alerts", "rules")
    assert rules.out.splitlines()[1].split()[1:6] == ["refusals", "proxy_refused", "5", "10", "60"]
    wrong = live.cli(
        "alerts", "add-rule", "x", "job_failed", "--channel", "nobody", "--threshold", "2"
    )
    assert wrong.code == 2
    assert (
        live.cli("alerts", "switch-rule", "refusals", "off").out.strip() == "rule refusals is off"
    )
    assert live.cli("alerts", "rules").out.splitlines()[1].split()[-1] == "off"
    assert live.cli("alerts", "remove-rule", "refusals").code == 0
    assert live.cli("alerts", "rules").out.strip() == "no rules"
    assert live.cli("alerts", "remove-channel", "ops").code == 0
