"""``docs/alerts/dgxmm-rules.yml``, Prometheus' alerting rules over dgxmm's /metrics (issue 30,
point 4): Debian's ``promtool`` checks the file and runs its unit tests
(``dgxmm-rules.test.yml``: each alert fires on example series, and not on healthy ones), and
every series a rule names is one dgxmm serves."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml
from server.test_metrics import Served, do_some_work, samples, skip_a_time, value
from server.test_metrics import served as served  # noqa: PLC0414  (the fixture, by its name)
from support import need

RULES = Path(__file__).parents[2] / "docs" / "alerts" / "dgxmm-rules.yml"
TESTS = RULES.with_name("dgxmm-rules.test.yml")
NOT_DGXMMS = {"up"}  # Prometheus' own series of a scrape


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which("promtool")
    need(found is not None, "promtool is not installed (Debian's prometheus package)")
    assert found is not None
    return subprocess.run(
        [found, *args], capture_output=True, text=True, timeout=120, cwd=RULES.parent, check=False
    )


def test_promtool_finds_the_rules_well_formed() -> None:
    checked = promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 8 rules found" in checked.stdout


def test_each_alert_fires_on_its_example_series_and_not_on_healthy_ones() -> None:
    tested = promtool("test", "rules", TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    alerts = {rule["alert"] for group in _rules()["groups"] for rule in group["rules"]}
    covered = {
        case["alertname"]
        for test in yaml.safe_load(TESTS.read_text())["tests"]
        for case in test["alert_rule_test"]
    }
    assert alerts == covered  # every alert has a test


def test_every_series_a_rule_names_is_served(served: Served) -> None:
    named = {
        name
        for group in _rules()["groups"]
        for rule in group["rules"]
        for name in re.findall(r"\b(?:dgxmm_[a-z_]+|up)\b", rule["expr"])
    }
    do_some_work(served)
    skip_a_time(served)
    found = samples(served.client.get("/metrics").text)
    served_names = {name for name, _ in found}
    assert named - NOT_DGXMMS - served_names == set()
    assert value(found, "dgxmm_schedules_paused", deployment="llama") == 0.0  # none failed


def _rules() -> dict[str, list[dict[str, list[dict[str, str]]]]]:
    loaded: dict[str, list[dict[str, list[dict[str, str]]]]] = yaml.safe_load(RULES.read_text())
    return loaded
