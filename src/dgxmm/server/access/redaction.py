"""What a viewer may read of a deployment: its secrets masked, model-server output left out.

Admins read everything. A viewer token (the Prometheus one included) reads what dgxmm says
about a deployment, never what its model server wrote or what it was given to keep secret:

- ``environment``: every value is ``***`` (the names stay: they say what is configured).
- ``command``: an argument is ``***`` when it follows a secret flag (``--api-key sk-1`` ->
  ``--api-key ***``), unless it is a flag itself (starts with ``--``); ``--flag=value`` and
  ``NAME=value`` keep the name and mask the value when the name is a secret one. A flag or a
  name is secret when one of its words (split at ``-`` and ``_``, any case) is one of
  ``SECRET_WORDS`` (``--api-key``, ``--hf-token``, ``--passphrase``, ``HF_TOKEN``; not
  ``--tokenizer``), or one of ``PLURAL_SECRET_WORDS`` (``--api-keys``, ``--hf-tokens``)
  unless its value is a whole number: then it is a count (``--max-num-batched-tokens
  8192``). A short flag (``-k``) is never secret by its name: one letter means a key to one
  program and ``--insecure`` to another (curl); a key-like value after it is masked as text.
- An argument holding several shell words (``bash -c 'vllm --api-key S1'``) is read as the
  words a shell would see, quotes honoured, with the rule above applied to them: a secret
  in a shell string is masked like one in the command itself.
- Any text shown (the arguments above, ``base_url``, ``last_error``, an event's detail, an
  insight's message, a schedule's last result): what looks like a key wherever it stands
  (``sk-...``, ``hf_...``, a dgxmm token), a URL's password (``http://user:***@host``) and
  the credential after ``Authorization:`` or ``Bearer`` (``Authorization: Bearer ***``)
  are masked.
- ``last_error`` and the texts that quote it lose the model server's log tail (its last
  lines, which the backends append after ``LOG_TAIL_MARK``): the log is an admin's read
  (``GET /api/deployments/{id}/log``), and its first line repeats the whole command.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import shlex
from collections.abc import Sequence

from dgxmm.decider import Schedule
from dgxmm.fleet import LOG_TAIL_MARK, Deployment, Event, Insight
from dgxmm.server.access.tokens import Identity

__all__ = [
    "MASK",
    "PLURAL_SECRET_WORDS",
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
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pass",
        "passphrase",
        "credential",
        "auth",
        "bearer",
    }
)
# Plural words name secrets too (``--api-keys``), but also counts of things that are not
# secret (``--max-num-batched-tokens 8192``): a whole number after one is a count.
PLURAL_SECRET_WORDS = frozenset(
    {
        "keys",
        "apikeys",
        "tokens",
        "secrets",
        "passwords",
        "passwds",
        "passphrases",
        "credentials",
    }
)

_KEY_LIKE = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{6,}|hf_[A-Za-z0-9]{6,}|dgxmm_[A-Za-z0-9_-]{16,})")
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+@")
# The credential of an Authorization header, or after the word Bearer, wherever it is
# written: ``Authorization: Bearer X``, ``authorization=X``, ``bearer X``. A quote or a
# separator ends it, so that the shell's or a header list's punctuation stays.
_CREDENTIAL = re.compile(
    r"(?i)(\bauthorization\s*[:=]\s*(?:(?:bearer|basic|token|digest)\s+)?|\bbearer\s+)"
    r"(?!token\b)[^\s'\",;]+"
)
# A shell word: unquoted characters, escapes and quoted strings run together (``--a="b c"``);
# a word with an unbalanced quote is read up to the next space.
_SHELL_WORD = re.compile(r"""(?:[^\s'"\\]+|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+|\S+""")
# Shell strings inside shell strings: past this depth the whole argument is masked, so that
# no argument can make the masking recurse without end.
_MAX_SHELL_DEPTH = 4


class Secrecy(enum.Enum):
    """What a flag's or a variable's name says of its value."""

    NONE = "none"
    SECRET = "secret"
    SECRET_UNLESS_COUNT = "secret_unless_count"


def _secrecy(name: str) -> Secrecy:
    words = re.split(r"[-_]+", name.lstrip("-").lower())
    if any(word in SECRET_WORDS for word in words):
        return Secrecy.SECRET
    if any(word in PLURAL_SECRET_WORDS for word in words):
        return Secrecy.SECRET_UNLESS_COUNT
    return Secrecy.NONE


def _hides(secrecy: Secrecy, value: str) -> bool:
    if secrecy is Secrecy.SECRET_UNLESS_COUNT:
        return not value.isdigit()
    return secrecy is Secrecy.SECRET


def is_secret_name(name: str) -> bool:
    """Tell whether a flag or a variable may name a secret (``--api-key``, ``HF_TOKEN``)."""
    return _secrecy(name) is not Secrecy.NONE


def masked_text(text: str) -> str:
    """Return ``text`` with key-like words, URL passwords and authorization credentials masked."""
    text = _CREDENTIAL.sub(rf"\1{MASK}", _KEY_LIKE.sub(MASK, text))
    return _URL_PASSWORD.sub(rf"\1{MASK}@", text)


def public_text(text: str | None) -> str | None:
    """Return what a viewer may read of dgxmm's words about a failure: no log tail, masked."""
    if text is None:
        return None
    return masked_text(text.split(LOG_TAIL_MARK, 1)[0])


def masked_command(command: Sequence[str]) -> tuple[str, ...]:
    """Return a command line with the values of secret flags and key-like words masked."""
    return tuple(_masked_words(command, depth=0))


def _masked_words(words: Sequence[str], *, depth: int) -> list[str]:
    shown: list[str] = []
    flag = Secrecy.NONE  # what the word before said of this one
    for word in words:
        name, equals, value = word.partition("=")
        if flag is not Secrecy.NONE and not word.startswith("--"):
            shown.append(MASK if _hides(flag, word) else word)
        elif equals and not _has_space(name) and _hides(_secrecy(name), value):
            shown.append(f"{name}={MASK}")
        elif _has_space(word):
            shown.append(_masked_shell_string(word, depth=depth + 1))
        else:
            shown.append(masked_text(word))
        is_flag = word.startswith("-") and not equals and not _has_space(word)
        flag = _secrecy(word) if is_flag else Secrecy.NONE
    return shown


def _has_space(text: str) -> bool:
    return any(character.isspace() for character in text)


def _masked_shell_string(text: str, *, depth: int) -> str:
    """Return a shell string with the rule of ``masked_command`` applied to its words.

    The words a shell would see are masked like a command's arguments; a word left as it
    was keeps its quotes and the spaces around it, so that a viewer reads the string as
    written, less its secrets.
    """
    if depth > _MAX_SHELL_DEPTH:
        return MASK
    spans = [match.span() for match in _SHELL_WORD.finditer(text)]
    written = [text[start:end] for start, end in spans]
    unquoted = [_unquoted(word) for word in written]
    masked = _masked_words(unquoted, depth=depth)
    pieces: list[str] = []
    last = 0
    for (start, end), word, plain, shown in zip(spans, written, unquoted, masked, strict=True):
        pieces.append(text[last:start])
        if shown == plain:
            pieces.append(word)
        else:
            pieces.append(shlex.quote(shown) if _has_space(shown) else shown)
        last = end
    pieces.append(text[last:])
    # Over the whole string too: ``Authorization: Bearer X`` spans several words.
    return masked_text("".join(pieces))


def _unquoted(word: str) -> str:
    """Return a shell word as the program receives it (``'a b'`` -> ``a b``)."""
    if not any(character in word for character in "'\"\\"):
        return word  # nothing to undo, and shlex is slow on a long command
    try:
        parts = shlex.split(word)
    except ValueError:  # an unbalanced quote: read as written
        return word
    return parts[0] if len(parts) == 1 else word


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
        idle_paused=public_text(deployment.idle_paused),  # quotes a failed step's error
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
