"""The web pages: server-rendered HTML, one module per page; their buttons call the JSON API.

Everything a page does goes through the same API a script would use (``static/dgxmm.js``
sends it with the login cookie), so the pages add no second way to change anything. Each
module has a ``router``; ``render`` renders a template for a logged-in person.
"""

from dgxmm.server.pages import alerts as alerts
from dgxmm.server.pages import api_docs as api_docs
from dgxmm.server.pages import audit as audit
from dgxmm.server.pages import deployment_form as deployment_form
from dgxmm.server.pages import deployments as deployments
from dgxmm.server.pages import insights as insights
from dgxmm.server.pages import instances as instances
from dgxmm.server.pages import job as job
from dgxmm.server.pages import jobs as jobs
from dgxmm.server.pages import login as login
from dgxmm.server.pages import playground as playground
from dgxmm.server.pages import proxy as proxy
from dgxmm.server.pages import queries as queries
from dgxmm.server.pages import render as render
from dgxmm.server.pages import runs as runs
from dgxmm.server.pages import savings as savings
from dgxmm.server.pages import schedules as schedules
from dgxmm.server.pages import store as store
from dgxmm.server.pages import tokens as tokens
from dgxmm.server.pages import traffic as traffic
from dgxmm.server.pages import workload as workload

__all__ = [
    "alerts",
    "api_docs",
    "audit",
    "deployment_form",
    "deployments",
    "insights",
    "instances",
    "job",
    "jobs",
    "login",
    "playground",
    "proxy",
    "queries",
    "render",
    "runs",
    "savings",
    "schedules",
    "store",
    "tokens",
    "traffic",
    "workload",
]
