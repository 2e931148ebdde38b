"""The command line against a live server: a real app on a loopback port (import:
``from cli.clikit import Cli, Live``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from dgxmm.alerts import Alerts
from dgxmm.cli import app
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.fleet import Fleet
from dgxmm.server import Host
from dgxmm.store import Store

runner = CliRunner()


@dataclass(frozen=True)
class Outcome:
    """What one command did: its exit code, what it printed, what it said on stderr."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """The JSON it printed."""
        return json.loads(self.out)


def run(*args: str) -> Outcome:
    """Run ``dgxmm ARGS`` in this process."""
    result = runner.invoke(app, list(args))
    return Outcome(result.exit_code, result.stdout, result.stderr)


@dataclass(frozen=True)
class Live:
    """A server on 127.0.0.1 and its parts; ``cli`` runs commands against it."""

    url: str
    token_file: Path
    data: Path
    store: Store
    host: Host
    fleet: Fleet
    schedules: ScheduleService
    proposals: ProposalService
    alerts: Alerts

    def cli(self, *args: str) -> Outcome:
        """Run ``dgxmm ARGS --url URL --token-file FILE``."""
        return run(*args, "--url", self.url, "--token-file", str(self.token_file))
