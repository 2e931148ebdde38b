"""The web pages: server-rendered HTML; their buttons and forms call the JSON API.

Everything a page does goes through the same API a script would use (``static/dgxmm.js``
sends it with the login cookie), so the pages add no second way to change anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from dgxmm.errors import NotFound
from dgxmm.jobs import Tier
from dgxmm.server.auth import Identity, Tokens
from dgxmm.server.charts import WINDOWS, runs_chart
from dgxmm.server.deps import COOKIE, identify
from dgxmm.server.host import Host
from dgxmm.server.job_list import iso, job_rows

__all__ = ["render_page", "router", "templates"]

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).with_name("templates"))

PRESETS = [
    ("every minute", "* * * * *"),
    ("every 5 minutes", "*/5 * * * *"),
    ("every 15 minutes", "*/15 * * * *"),
    ("hourly", "0 * * * *"),
    ("daily at 03:00", "0 3 * * *"),
    ("weekdays at 03:00", "0 3 * * 1-5"),
    ("Sundays at 04:00", "0 4 * * 0"),
    ("first of the month at 02:00", "0 2 1 * *"),
]


def _when(value: str | None) -> str:
    """Show an ISO time as 'YYYY-MM-DD HH:MM:SS' (its offset on hover in the template)."""
    if not value:
        return "—"
    return value[:19].replace("T", " ")


templates.env.filters["when"] = _when


def render_page(request: Request, template: str, **context: Any) -> Response:
    """Render a page for a logged-in person, or send them to the login page."""
    who = identify(request)
    if who is None:
        return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
    host: Host = request.app.state.host
    context.update(who=who, time_zone=host.time_zone.key, page=template.removesuffix(".html"))
    return templates.TemplateResponse(request, template, context)


@router.get("/")
def home() -> Response:
    """Start at the job list."""
    return RedirectResponse("/jobs", status_code=303)


@router.get("/login")
def login_form(request: Request, next: str = "/jobs", error: str | None = None) -> Response:
    """Ask for a token."""
    return templates.TemplateResponse(
        request, "login.html", {"next": _local(next), "error": error, "who": None, "page": "login"}
    )


@router.post("/login")
async def login(request: Request) -> Response:
    """Check a token and keep it in an HttpOnly cookie."""
    form = parse_qs((await request.body()).decode(errors="replace"))
    token = (form.get("token") or [""])[0].strip()
    target = _local((form.get("next") or ["/jobs"])[0])
    tokens: Tokens = request.app.state.tokens
    if tokens.identify(token) is None:
        return RedirectResponse(
            f"/login?next={quote(target)}&error=that+token+is+not+valid", status_code=303
        )
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
    return response


@router.post("/logout")
def logout() -> Response:
    """Forget the login cookie."""
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(request: Request) -> Response:
    """Scheduled jobs: every job, the system jobs first."""
    host: Host = request.app.state.host
    return render_page(request, "jobs.html", jobs=job_rows(host))


@router.get("/jobs/new", response_class=HTMLResponse)
def job_form(request: Request, edit: str | None = None) -> Response:
    """The form that defines (or, with ?edit=name, redefines) a user job."""
    host: Host = request.app.state.host
    job: dict[str, Any] = {"enabled": True}
    if edit:
        try:
            job = dict(host.store.job(edit).definition)
        except NotFound:
            return Response(f"no job named {edit!r}", status_code=404)
    args = job.get("args")
    return render_page(
        request,
        "job_form.html",
        job=job,
        args_text=json.dumps(args, indent=2) if args is not None else "{}",
        editing=edit,
        presets=PRESETS,
        queries=host.store.queries(),
    )


@router.get("/workload", response_class=HTMLResponse)
def workload_page(request: Request, tier: str = "hours") -> Response:
    """Each job's runs over time: count and failures per minute, hour or day."""
    host: Host = request.app.state.host
    chosen = Tier.HOURS if tier not in ("minutes", "hours", "days") else Tier.named(tier)
    stats = host.scheduler.stats
    assert stats is not None
    now = host.clock.now_us()
    charts = [
        {
            "name": row["name"],
            "kind": row["kind"],
            "svg": runs_chart(
                row["name"], stats.history(row["name"], chosen), chosen, now, host.time_zone
            ),
            "runs": sum(
                b.count
                for b in stats.history(row["name"], chosen)
                if b.start_us > now - WINDOWS[chosen] * chosen.width_us
            ),
        }
        for row in job_rows(host)
    ]
    return render_page(request, "workload.html", charts=charts, tier=chosen.label)


@router.get("/queries", response_class=HTMLResponse)
def queries_page(request: Request) -> Response:
    """Saved queries, and the form that defines one."""
    host: Host = request.app.state.host
    return render_page(request, "queries.html", queries=host.store.queries())


@router.get("/store", response_class=HTMLResponse)
def store_page(request: Request) -> Response:
    """The store and its operations."""
    host: Host = request.app.state.host
    store = host.store
    version = store.catalog_version()
    return render_page(
        request,
        "store.html",
        store=store,
        version=version,
        journal=[
            {**entry.to_json(), "at": iso(entry.at_us, host)}
            for entry in reversed(store.journal(after_version=max(0, version - 20)))
        ],
    )


def _local(target: str) -> str:
    """Only follow redirects to our own pages."""
    return target if target.startswith("/") and not target.startswith("//") else "/jobs"


def identity_of(request: Request) -> Identity | None:
    """Who the page is for (templates use it to hide what a viewer may not do)."""
    return identify(request)
