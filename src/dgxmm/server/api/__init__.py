"""The JSON API, one module per noun of its URLs: ``/api/<noun>`` is ``api/<noun>.py``.

Each module has a ``router``; ``server/app.py`` hands them to the app in a layer's ``Routes``.
"""

from dgxmm.server.api import alerts as alerts
from dgxmm.server.api import attic as attic
from dgxmm.server.api import audit as audit
from dgxmm.server.api import catalog as catalog
from dgxmm.server.api import changes as changes
from dgxmm.server.api import deployments as deployments
from dgxmm.server.api import insights as insights
from dgxmm.server.api import instances as instances
from dgxmm.server.api import jobs as jobs
from dgxmm.server.api import proposals as proposals
from dgxmm.server.api import proxy as proxy
from dgxmm.server.api import queries as queries
from dgxmm.server.api import runs as runs
from dgxmm.server.api import savings as savings
from dgxmm.server.api import schedules as schedules
from dgxmm.server.api import store as store
from dgxmm.server.api import tokens as tokens
from dgxmm.server.api import traffic as traffic

__all__ = [
    "alerts",
    "attic",
    "audit",
    "catalog",
    "changes",
    "deployments",
    "insights",
    "instances",
    "jobs",
    "proposals",
    "proxy",
    "queries",
    "runs",
    "savings",
    "schedules",
    "store",
    "tokens",
    "traffic",
]
