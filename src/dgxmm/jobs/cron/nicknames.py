"""Cron nicknames: ``@daily`` and its kin, each the name of one 5-field expression.

A nickname stands alone, in lower case, as in Vixie cron; ``CronSchedule`` reads it as its
five fields, so ``@daily`` equals ``0 0 * * *`` and prints as it. ``@reboot`` names a
start-up event, which dgxmm does not have (a host ticks the scheduler, nothing fires when a
process starts), so it is refused rather than mapped to some time.
"""

from __future__ import annotations

from dgxmm.errors import CronError

__all__ = ["NICKNAMES", "expand_nickname"]

NICKNAMES: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def expand_nickname(text: str) -> str:
    """Return the 5 fields a nickname stands for; text without one comes back as it is."""
    parts = text.split()
    if not parts or not parts[0].startswith("@"):
        return text
    word = parts[0]
    if word == "@reboot":
        raise CronError(
            "'@reboot' runs at start-up, and dgxmm has no start-up event "
            "(a host ticks the scheduler); write the 5 fields of a time instead"
        )
    known = ", ".join(NICKNAMES)
    if word.lower() in NICKNAMES and word not in NICKNAMES:
        raise CronError(f"{text.strip()!r}: nicknames are lower case; write {word.lower()!r}")
    if word not in NICKNAMES:
        raise CronError(f"{word!r} is not a cron nickname (known: {known}); or write 5 fields")
    if len(parts) > 1:
        raise CronError(
            f"{text.strip()!r}: a nickname stands alone; write {word!r} or its 5 fields "
            f"{NICKNAMES[word]!r}, not both"
        )
    return NICKNAMES[word]
