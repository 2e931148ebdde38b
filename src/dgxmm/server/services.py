"""The services an app serves, as one typed, frozen object on ``app.state.services``."""

from __future__ import annotations

from dataclasses import dataclass, field

from dgxmm.alerts import Alerts
from dgxmm.decider import ProposalService, ScheduleService
from dgxmm.decider.idle import WaitBudgets
from dgxmm.fleet import Fleet
from dgxmm.lab.trade import TradePictures
from dgxmm.proxy import ProxyStats
from dgxmm.server.access.tokens import Tokens
from dgxmm.server.host import Host
from dgxmm.server.model_check import CheckSlots
from dgxmm.server.telemetry import ServerMetrics

__all__ = ["Services"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    """The host and tokens every app has, and the fleet and decider services it may have.

    An app built without one of the optional services serves none of the routes that need it
    (``create_app`` refuses such routes), so a route never finds its service missing.
    """

    host: Host
    tokens: Tokens
    fleet: Fleet | None = None
    schedules: ScheduleService | None = None
    proposals: ProposalService | None = None
    # What /metrics serves; give the same one to the fleet and the host as their telemetry.
    metrics: ServerMetrics = field(default_factory=ServerMetrics)
    proxy: ProxyStats | None = None  # the proxy's numbers, when it serves (for /metrics)
    proxy_url: str | None = None  # where this server's proxy listens (a model check's way)
    proxy_check_key: str | None = None  # the proxy's check key (``ProxyApp.check_key``)
    model_checks: CheckSlots = field(default_factory=CheckSlots)  # the checks at once
    alerts: Alerts | None = None  # channels, rules and the delivery log (admins)
    # The wait budgets' daily prices (their job runs on the host; their choices are shown).
    budgets: WaitBudgets | None = None
    # Each deployment's trade picture on the Savings page, replayed once a day and price.
    trades: TradePictures = field(default_factory=TradePictures)
