"""What every command shares: where the server (or, with ``--offline``, the database) is, how
answers are printed, and the exit codes.

Every command asks a running server over its HTTP API. It finds the server with ``--url``, or
in the data directory (``--data``, default ``./dgxmm-data``), where ``dgxmm serve`` writes
``server.json`` (where it listens) and ``admin-token``; ``--token-file`` names another token.
``--offline`` opens the database directly instead, for the commands that can work without a
server. Nothing here creates a data directory: one that does not exist is an error.

Exit codes: 0 done; 2 the input was wrong (a bad value, an unknown name); 1 anything else (a
refusal, a failed run, no server).
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer

from dgxmm.cli.client import Client
from dgxmm.cli.help_text import PlainCommand
from dgxmm.errors import DgxmmError, InvalidInput, NotFound, Unreachable
from dgxmm.places import ADMIN_TOKEN_FILE, DEFAULT_DATA_DIR, SERVER_FILE
from dgxmm.time_units import SECOND_US

if TYPE_CHECKING:
    from dgxmm.store import Store

__all__ = [
    "Answer",
    "JsonOption",
    "PriceOption",
    "Switch",
    "SwitchArgument",
    "Target",
    "command",
    "exit_code",
    "fail",
    "handles_errors",
    "local_time",
    "table",
]

P = ParamSpec("P")
R = TypeVar("R")

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
# The price of waiting a cost is given at; the server (or the lab) checks it, naming price.
PriceOption = Annotated[
    str | None,
    typer.Option(
        "--price",
        help="W: GiB-hours one request-second of waiting is worth, >= 0 (default 0.1).",
    ),
]


class Switch(StrEnum):
    """``on`` or ``off``, as a command's argument (``dgxmm jobs enable NAME on``)."""

    ON = "on"
    OFF = "off"


SwitchArgument = Annotated[Switch, typer.Argument(help="on or off.")]


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What a command prints: JSON with ``--json``, else the text; and its exit code."""

    value: Any
    text: str
    code: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """Where a command's work is done: a server over HTTP, or the database itself."""

    data: Path
    db: str | None = None
    url: str | None = None
    token_file: Path | None = None
    offline: bool = False

    @property
    def data_dir(self) -> Path:
        """The data directory, absolute."""
        return self.data.expanduser().absolute()

    def client(self) -> Client:
        """Return a client of the server (``Unreachable`` when none is known)."""
        url = self.url or self._announced_url()
        return Client(url, self._token(url))

    @contextmanager
    def store(self) -> Iterator[Store]:
        """Open the database for one command and close it after (statistics written)."""
        # Here, not above: asking a server needs no database code.
        from dgxmm.store import Store

        data_dir = self.data_dir
        if not data_dir.is_dir():
            raise InvalidInput(
                "data", f"{data_dir} does not exist (`dgxmm serve --data {self.data}` makes it)"
            )
        store = Store.open(self.db or data_dir / "dgxmm.db", data_dir=data_dir)
        try:
            yield store
        finally:
            store.close()

    def either(self, offline: Callable[[Store], R], online: Callable[[Client], R]) -> R:
        """Do a command's work on the database (``--offline``) or on the server, once."""
        if self.offline:
            with self.store() as store:
                return offline(store)
        with self.client() as api:
            return online(api)

    def _announces(self, url: str) -> bool:
        """Tell whether the data directory's server listens at ``url``."""
        try:
            return self._announced_url().rstrip("/") == url.rstrip("/")
        except Unreachable:
            return False

    def _announced_url(self) -> str:
        path = self.data_dir / SERVER_FILE
        try:
            announced = json.loads(path.read_text())
            return str(announced["url"])
        except FileNotFoundError:
            where = "does not exist" if not self.data_dir.is_dir() else "holds no server.json"
            raise Unreachable(
                f"no dgxmm server found: the data directory {self.data_dir} {where} (start "
                "one with `dgxmm serve`, or give --data, --url, or --offline)"
            ) from None
        except (ValueError, KeyError, TypeError):
            raise Unreachable(f"{path} does not say where the server listens") from None

    def _token(self, url: str) -> str | None:
        if self.token_file is None and self.url is not None and not self._announces(url):
            # The data directory's admin token is its own server's: never sent to another.
            return None
        path = self.token_file or self.data_dir / ADMIN_TOKEN_FILE
        try:
            return path.read_text().strip() or None
        except FileNotFoundError:
            if self.token_file is not None:
                raise InvalidInput("token_file", f"{path} does not exist") from None
            return None  # the server answers 401, which says to give --token-file


_DATA = inspect.Parameter(
    "data",
    inspect.Parameter.KEYWORD_ONLY,
    default=DEFAULT_DATA_DIR,
    annotation=Annotated[
        Path,
        typer.Option(
            "--data",
            help="The data directory (its server.json and admin-token say where and how).",
            envvar="DGXMM_DATA",
        ),
    ],
)
_URL = inspect.Parameter(
    "url",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        str | None,
        typer.Option(
            "--url", help="The server (default: the data directory's).", envvar="DGXMM_URL"
        ),
    ],
)
_TOKEN_FILE = inspect.Parameter(
    "token_file",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="A file holding the API token (default: <data>/admin-token).",
            envvar="DGXMM_TOKEN_FILE",
        ),
    ],
)
_OFFLINE = inspect.Parameter(
    "offline",
    inspect.Parameter.KEYWORD_ONLY,
    default=False,
    annotation=Annotated[
        bool, typer.Option("--offline", help="Open the database directly, without a server.")
    ],
)
_DB = inspect.Parameter(
    "db",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        str | None,
        typer.Option(
            "--db",
            help="With --offline: a PostgreSQL URL or a SQLite path (default: <data>/dgxmm.db).",
            envvar="DGXMM_DB",
        ),
    ],
)
_JSON = inspect.Parameter(
    "as_json", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonOption
)


def command(
    group: typer.Typer, name: str, *, offline: bool = True
) -> Callable[[Callable[..., Answer]], Callable[..., Answer]]:
    """Register ``fn(where: Target, ...) -> Answer`` as a command of ``group``.

    The command gets the options every command has (``--data``, ``--url``, ``--token-file``,
    ``--json``, and ``--offline`` and ``--db`` where ``offline`` says it can work without a
    server), prints its answer and exits with its code.
    """

    def register(fn: Callable[..., Answer]) -> Callable[..., Answer]:
        own = list(inspect.signature(fn, eval_str=True).parameters.values())[1:]
        shared = [_DATA, _URL, _TOKEN_FILE, *((_OFFLINE, _DB) if offline else ()), _JSON]

        @functools.wraps(fn)
        def run(**options: Any) -> None:
            as_json = options.pop("as_json")
            where = Target(
                data=options.pop("data"),
                url=options.pop("url"),
                token_file=options.pop("token_file"),
                offline=options.pop("offline", False),
                db=options.pop("db", None),
            )
            try:
                if where.offline and where.url is not None:
                    raise InvalidInput("offline", "give --url or --offline, not both")
                answer = fn(where, **options)
            except DgxmmError as error:
                raise fail(error) from None
            if as_json:
                typer.echo(json.dumps(answer.value, indent=2, default=str))
            elif answer.text:
                typer.echo(answer.text)
            if answer.code:
                raise typer.Exit(answer.code)

        parameters = [*own, *shared]
        run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters}
        group.command(name, cls=PlainCommand)(run)
        return fn

    return register


def json_option(text: str, field: str) -> Any:
    """Read an option given as JSON; ``InvalidInput`` naming the option when it is not."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(field, f"not valid JSON ({error})") from error


def exit_code(error: DgxmmError) -> int:
    """2 for input that was wrong (a bad value, an unknown name); 1 for anything else."""
    return 2 if isinstance(error, InvalidInput | NotFound) else 1


def fail(error: DgxmmError) -> typer.Exit:
    """Print an error the way the API shapes it, one line per wrong field; return the exit."""
    if isinstance(error, InvalidInput):
        for field, message in error.errors or ((error.field, error.message),):
            typer.echo(f"error: {field}: {message}" if field else f"error: {message}", err=True)
    else:
        typer.echo(f"error: {error}", err=True)
    return typer.Exit(exit_code(error))


def handles_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn dgxmm's errors into one line on stderr and a non-zero exit."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except DgxmmError as error:
            raise fail(error) from None

    return wrapper


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], empty: str) -> str:
    """Return rows as aligned columns under their headers, or ``empty`` when there are none."""
    cells = [[_cell(value) for value in row] for row in rows]
    if not cells:
        return empty
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
    lines = [list(headers), *cells]
    return "\n".join(
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def local_time(value: object) -> str:
    """Return a time the API gave (ISO text or microseconds) as this machine's wall time."""
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        moment = datetime.fromtimestamp(value / SECOND_US, UTC)
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            return str(value)  # not a time after all: shown as it came
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
