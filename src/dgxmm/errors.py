"""The one error hierarchy of dgxmm.

Every layer raises these; only the server maps them to HTTP status codes::

    DgxmmError
    ├── InvalidInput(field, message)      -> 400 {"error", "field", "message"}
    │   ├── CronError                     a cron expression that cannot be used
    │   ├── ZoneError                     an unknown or malformed IANA zone name
    │   └── DefinitionError               a refused definition (job, query, schedule, ...)
    ├── NotFound(kind, name)              -> 404
    ├── Conflict(message, field=None)     -> 409 (a name that already exists, a place taken)
    │   └── DoesNotFit                    a start or wake the GPU inventory cannot hold
    ├── Busy                              -> 409 (try again when the work under way finished)
    ├── Forbidden                         -> 403
    ├── LimitExceeded                     a run stopped by one of its limits
    │   ├── TimeoutExceeded
    │   └── MemoryLimitExceeded
    ├── Abandoned                         a run its host gave up (it stopped while the run went on)
    ├── Cancelled                         a run someone cancelled (an admin, or an overlap policy)
    ├── NotAllowed                        a run that would do more than its effects allow
    ├── StoreError                        the database refused or failed
    ├── BackupError                       a backup or restore that cannot be trusted
    ├── CannotDecide                      a decision model that gave no usable verdict
    ├── BackendError                      a model server that failed or is gone -> 502
    │   ├── ServerGone                    nothing answers any more: the deployment has failed
    │   └── TimedOut                      no answer in time: the outcome is not known
    └── Unreachable                       no dgxmm server answers the command line

This module sits outside the layers (see DESIGN.md): it imports nothing and every layer may
import it, so that one hierarchy serves all of them.
"""

from __future__ import annotations

from collections.abc import Sequence


class DgxmmError(Exception):
    """The root of every error dgxmm raises on purpose.

    ``public`` is the part of the message anyone may read when the rest may carry data a
    viewer must not see (a database's own words, which can quote a value a query read);
    None means the whole message is dgxmm's own words and may be shown to anyone.
    """

    public: str | None = None


class InvalidInput(DgxmmError, ValueError):
    """Input a user sent that cannot be used; names the field and the problem.

    ``errors`` lists every wrong field as ``(field, message)`` when the check went on past
    the first (a job definition); ``field`` and ``message`` are the first of them.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message
        self.errors: tuple[tuple[str, str], ...] = ()

    @classmethod
    def every(cls, wrong: Sequence[tuple[str, str]]) -> InvalidInput:
        """Return one refusal of every wrong field in ``wrong`` (``(field, message)``, at
        least one): the first as its ``field`` and ``message``, all of them as ``errors``."""
        first = cls(*wrong[0])
        first.errors = tuple(wrong)
        return first


class CronError(InvalidInput):
    """A cron expression that does not parse or can never fire."""

    def __init__(self, message: str, field: str = "schedule") -> None:
        super().__init__(field, message)

    def __str__(self) -> str:
        return self.message


class ZoneError(InvalidInput):
    """An IANA time-zone name that is unknown or malformed."""

    def __init__(self, name: object, field: str = "zone") -> None:
        super().__init__(
            field, f"unknown time zone {name!r} (use an IANA name like 'Europe/Berlin')"
        )
        self.name = name


class DefinitionError(InvalidInput):
    """A refused definition: nothing was changed."""


class NotFound(DgxmmError, LookupError):
    """A named thing that does not exist."""

    def __init__(self, kind: str, name: object) -> None:
        super().__init__(f"no {kind} named {name!r}")
        self.kind = kind
        self.name = name


class Conflict(DgxmmError):
    """A name that is already taken, or a change that contradicts the current state.

    ``field`` names the input that collides, when one does (a restore's ``target``).
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


class DoesNotFit(Conflict):
    """A start or wake the GPU inventory cannot hold; the message says which GPU, how short."""


class Busy(DgxmmError):
    """Refused because other work is under way; try again when it has finished."""


class Forbidden(DgxmmError):
    """The caller may not do this."""


class LimitExceeded(DgxmmError):
    """A run stopped by one of its limits."""


class TimeoutExceeded(LimitExceeded):
    """A run passed its timeout."""


class MemoryLimitExceeded(LimitExceeded):
    """A run held more live bytes than its memory limit allows."""


class Abandoned(DgxmmError):
    """A run its host gave up; the action sees it at its next ``check()``."""


class Cancelled(DgxmmError):
    """A run someone cancelled; the action sees it at its next ``check()``."""


class NotAllowed(DgxmmError):
    """A run would do something outside the effects its definition was granted."""


class StoreError(DgxmmError):
    """The database refused or failed (the driver's error is on ``__cause__``)."""

    def __init__(self, message: str, *, public: str | None = None) -> None:
        super().__init__(message)
        self.public = public


class BackupError(DgxmmError):
    """A backup or restore that cannot be trusted (missing piece, wrong checksum)."""


class CannotDecide(DgxmmError):
    """A decision model that cannot decide a candidate (down, asleep, or an unusable answer)."""


class BackendError(DgxmmError):
    """A model server that failed to do what was asked, or is gone."""


class ServerGone(BackendError):
    """A model server that is no longer there: its process exited or its port refuses."""


class TimedOut(BackendError):
    """A model server that gave no answer within the action's time.

    Unlike an error answer, it says nothing of the outcome: the server may still do what it
    was asked (a hung sleep that finishes later), which a reconciliation can find.
    """


class Unreachable(DgxmmError):
    """No dgxmm server answers at the URL a command was given or found in the data directory."""
