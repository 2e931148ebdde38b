"""``dgxmm deployments check NAME``: the deployment page's model check, from the command line.

One chat message (or completion) sent to a running deployment through the server's
``POST /api/deployments/{id}/check`` (through the proxy when one runs), and its answer, time to
first token and speed; "-" where too few tokens, or too short a span, tell no speed.
"""

from __future__ import annotations

from typing import Annotated

import typer

from dgxmm.cli.common import Answer, Target, command
from dgxmm.cli.fleet.deployments import DeploymentArgument, deployment_id

__all__ = ["register"]


def register(group: typer.Typer) -> None:
    """Add ``check`` to ``dgxmm deployments``."""
    command(group, "check", offline=False)(check)


def check(
    where: Target,
    deployment: DeploymentArgument,
    prompt: Annotated[
        str, typer.Option("--prompt", help="What to send.")
    ] = "Say hello in five words.",
    kind: Annotated[
        str, typer.Option("--kind", help="chat (a chat message) or completion (plain text).")
    ] = "chat",
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="At most this many.")] = 64,
) -> Answer:
    """Send one request to a running deployment: its answer, first token and speed."""
    with where.client() as api:
        found = deployment_id(api, deployment)
        result = api.post(
            f"/api/deployments/{found}/check",
            {"kind": kind, "prompt": prompt, "max_tokens": max_tokens},
        )
    speed = "-" if result["tokens_per_s"] is None else f"{result['tokens_per_s']:g} tokens/s"
    first = "-" if result["first_token_ms"] is None else f"{result['first_token_ms']:g} ms"
    route = "through the proxy" if result["route"] == "proxy" else "straight to the server"
    text = "\n".join(
        [
            result["answer"] + (" ... (cut)" if result["cut"] else ""),
            "",
            f"model: {result['model']} ({route})",
            f"first token: {first}; total: {result['total_ms']:g} ms",
            f"speed: {speed} ({result['tokens']} tokens)",
        ]
    )
    return Answer(value=result, text=text)
