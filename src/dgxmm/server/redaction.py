"""What a viewer may read of a deployment: its secrets masked, model-server output left out.

Admins read everything. A viewer token (the Prometheus one included) reads what dgxmm says
about a deployment, never what its model server wrote or what it was given to keep secret:

- ``environment``: every value is ``***`` (the names stay: they say what is configured).
- ``command``: an argument is ``***`` when it follows a secret flag (``--api-key sk-1`` ->
  ``--api-key ***``), unless it is a flag itself (starts with ``--``); ``--flag=value`` and
  ``NAME=value`` keep the name and mask the value when the name is a secret one. A flag or a
  name is secret when one of its words (split at ``-`` and ``_``, any case) is one of
  ``SECRET_WORDS`` (``--api-key``, ``--hf-token``, ``--password``, ``HF_TOKEN``; not
  ``--max-num-batched-tokens`` or ``--tokenizer``).
- Any text shown (the arguments above, ``base_url``, ``last_error``, an event's detail, an
  insight's message, a schedule's last result): what looks like a key wherever it stands
  (``sk-...``, ``hf_...``, a dgxmm token) and a URL's password (``http://user:***@host``)
  are masked.
- ``last_error`` and the texts that quote it lose the model server's log tail (its last
  lines, which the backends append after ``LOG_TAIL_MARK``): the log is an admin's read
  (``GET /api/deployments/{id}/log``), and its first line repeats the whole command.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from dgxmm.decider import Schedule
from dgxmm.fleet import LOG_TAIL_MARK, Deployment, Event, Insight
from dgxmm.server.auth import Identity

__all__ = [
    "MASK",
    "SECRET_WORDS",
    "deployment_shown_to",
    "event_shown_to",
    "insight_shown_to",
    "is_secret_name",
    "masked_command",
    "masked_text",
    "public_text",
    "schedule_shown_to",
]

MASK = "***"
SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pass", "credential", "auth"}
)

_KEY_LIKE = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{6,}|hf_[A-Za-z0-9]{6,}|dgxmm_[A-Za-z0-9_-]{16,})")
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+@")


def is_secret_name(name: str) -> bool:
    """Tell whether a flag or a variable names a secret (``--api-key``, ``HF_TOKEN``)."""
    words = re.split(r"[-_]+", name.lstrip("-").lower())
    return any(word in SECRET_WORDS for word in words)


def masked_text(text: str) -> str:
    """Return ``text`` with key-like words and URL passwords masked."""
    return _URL_PASSWORD.sub(rf"\1{MASK}@", _KEY_LIKE.sub(MASK, text))


def public_text(text: str | None) -> str | None:
    """Return what a viewer may read of dgxmm's words about a failure: no log tail, masked."""
    if text is None:
        return None
    return masked_text(text.split(LOG_TAIL_MARK, 1)[0])


def masked_command(command: Sequence[str]) -> tuple[str, ...]:
    """Return a command line with the values of secret flags and key-like words masked."""
    shown: list[str] = []
    after_secret_flag = False
    for argument in command:
        name, equals, _ = argument.partition("=")
        if after_secret_flag and not argument.startswith("--"):
            shown.append(MASK)
        elif equals and is_secret_name(name):
            shown.append(f"{name}={MASK}")
        else:
            shown.append(masked_text(argument))
        after_secret_flag = argument.startswith("-") and not equals and is_secret_name(argument)
    return tuple(shown)


def _is_viewer(who: Identity | None) -> bool:
    # Nobody known (a page about to send them to the login) reads as little as a viewer.
    return who is None or not who.is_admin


def deployment_shown_to(deployment: Deployment, who: Identity | None) -> Deployment:
    """Return the deployment as ``who`` may read it: whole for an admin, masked for a viewer."""
    if not _is_viewer(who):
        return deployment
    return dataclasses.replace(
        deployment,
        command=None if deployment.command is None else masked_command(deployment.command),
        environment=dict.fromkeys(deployment.environment, MASK),
        base_url=None if deployment.base_url is None else masked_text(deployment.base_url),
        last_error=public_text(deployment.last_error),
    )


def event_shown_to(event: Event, who: Identity | None) -> Event:
    """Return a deployment's event as ``who`` may read it (a failure's detail quotes the log)."""
    if not _is_viewer(who):
        return event
    return dataclasses.replace(event, detail=public_text(event.detail))


def insight_shown_to(insight: Insight, who: Identity | None) -> Insight:
    """Return an insight as ``who`` may read it (a failed deployment's quotes its error)."""
    if not _is_viewer(who):
        return insight
    return dataclasses.replace(insight, message=public_text(insight.message) or "")


def schedule_shown_to(schedule: Schedule, who: Identity | None) -> Schedule:
    """Return a schedule as ``who`` may read it (a failed action's result quotes its error)."""
    if not _is_viewer(who):
        return schedule
    return dataclasses.replace(
        schedule,
        last_result=public_text(schedule.last_result),
        paused_reason=public_text(schedule.paused_reason),
    )
