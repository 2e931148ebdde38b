"""``dgxmm proxy``: the proxy as its page shows it, from the server's ``GET /api/proxy``.

Its address (what a client's ``base_url`` is), each model with its deployment's state as a
client reads it and what the proxy holds for it now, the last hour's refusals by reason, and
the hold's settings (the body bounds in MiB). ``--json`` prints the answer whole.
"""

from __future__ import annotations

from typing import Any

import typer

from dgxmm.cli.common import Answer, Target, command, table

__all__ = ["register"]

_MIB = 1024 * 1024


def register(app: typer.Typer) -> None:
    """Add ``dgxmm proxy`` to the command line."""
    command(app, "proxy", offline=False)(proxy)


def proxy(where: Target) -> Answer:
    """Show the proxy: its address, models and their state, what it holds, refusals, settings."""
    with where.client() as api:
        found = api.get("/api/proxy")
    return Answer(value=found, text=describe(found))


def describe(found: dict[str, Any]) -> str:
    """Return ``GET /api/proxy``'s answer as a person reads it."""
    address = found["address"]
    lines = [
        f"address: {address}"
        if address
        else "address: none: no proxy runs in this server (dgxmm serve --proxy-port 8001 "
        "serves one at http://127.0.0.1:8001/v1)",
        f"held now: {found['held_now']}",
        "",
    ]
    models = [
        (m["model"], ", ".join(m["aliases"]) or "-", m["deployment"], m["state"], m["held"],
         f"{m['held_bytes'] / _MIB:.1f}", m["forwarded"], m["wakes"])
        for m in found["models"]
    ]  # fmt: skip
    headers = ("MODEL", "ALIASES", "DEPLOYMENT", "STATE", "HELD", "HELD MIB", "PASSED ON",
               "WAKES")  # fmt: skip
    lines.append(table(headers, models, "no models: no deployment is defined"))
    lines.append("")
    refusals = found["refusals"]
    lines.append(f"refused in the last hour: {found['refused_last_hour']}")
    for refusal in refusals:
        lines.append(f"  {refusal['reason']}: {refusal['count']} ({refusal['words']})")
    settings = found["settings"]
    lines += [
        "",
        "settings (change them on the Proxy page, or PUT /api/proxy/settings):",
        f"  requests held per deployment: {settings['max_held']}",
        f"  longest hold: {settings['max_hold_s']:g} s",
        f"  bodies held per deployment: {settings['max_held_bytes'] / _MIB:g} MiB",
        f"  bodies held in all: {settings['max_held_bytes_total'] / _MIB:g} MiB",
    ]
    return "\n".join(lines)
