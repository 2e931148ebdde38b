"""Request traces read from files: dgxmm's requests CSV and the Azure LLM inference trace.

Both readers check the whole file before returning anything. A wrong file raises
``InvalidInput`` whose ``field`` names the line (1-based, the header is line 1) and the
column, as ``"line 7, timestamp"``, and no trace is returned; when several lines are wrong the
earliest is named. A column is named as the header names it; a value with no column above it
is ``"column N"`` (1-based); a header with no known column is ``"header"``; a line the CSV
module cannot split is ``"row"``. A file that cannot be opened is refused with field ``path``.

The requests CSV (``read_requests_csv``)::

    timestamp,model,input_tokens,output_tokens
    2026-03-30T08:00:01.5+02:00,llama-70b,812,95
    1774850401,llama-70b,,

- ``timestamp``: ISO 8601 with an offset (``Z`` or ``+02:00``), or Unix seconds (an integer or
  a decimal, read exactly to the microsecond, halves to even); a naive time is refused,
  because the trace would move by the reader's offset without anyone noticing.
- ``model``: the model's name, not blank.
- ``input_tokens``, ``output_tokens`` (optional columns): non-negative whole numbers; a blank
  value is a count the source did not give (``NO_TOKENS``).
- Any other column is refused, not ignored: a misspelt ``input_token`` that were ignored would
  drop every count silently, and the lab's figures would read as if the source had none.
- Blank lines are skipped; rows may come in any order and are sorted by arrival (ties keep
  the file's order).

The Azure trace (``read_azure_trace``): ``TIMESTAMP,ContextTokens,GeneratedTokens``, the
timestamp ``YYYY-MM-DD HH:MM:SS.fffffff`` with no zone, read as UTC (as the dataset's README
says); its fractional digits (seven, 100 ns) are rounded to the microsecond, halves up.

A file is read as a stream, ``_CHUNK`` records at a time, and each chunk's columns go into
numpy arrays before the next chunk is read: the rows' strings live for one chunk, so memory
is the arrays' (32 bytes a request) and not one Python object per value (10 million rows took
4.4 GiB read whole; docs/savings.md has the figures). Within a chunk each column is converted
in one pass of C-level ``map`` calls when the chunk's column has one form, and value by value
(slower, and naming the line of the first bad value) only when it does not. The first chunk
with a bad value or line is refused, so the earliest bad line is still the one named.
"""

from __future__ import annotations

import decimal
import gc
import math
import operator
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import repeat
from os import PathLike

import numpy as np

from dgxmm.clock import EARLIEST_US, LATEST_US, to_us
from dgxmm.errors import InvalidInput
from dgxmm.lab.traces.records import Chunk, chunks_of, opened
from dgxmm.lab.traces.trace import NO_TOKENS, Ints, Trace
from dgxmm.time_units import SECOND_US

__all__ = ["AZURE_COLUMNS", "REQUEST_COLUMNS", "read_azure_trace", "read_requests_csv"]

REQUEST_COLUMNS = ("timestamp", "model", "input_tokens", "output_tokens")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_REQUIRED = ("timestamp", "model")

_AZURE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?", re.ASCII
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
_MILLION = Decimal(SECOND_US)
# Exact for any seconds a finite float can spell to the microsecond, whatever context the
# caller's thread has set.
_DECIMAL = decimal.Context(prec=400, rounding=decimal.ROUND_HALF_EVEN, Emax=999, Emin=-999)
_EARLIEST_S, _LATEST_S = -(-EARLIEST_US // SECOND_US), LATEST_US // SECOND_US
_COUNT_DIGITS = 18  # any 18 digits fit in an int64
_SHOWN = 40  # characters of a value quoted in a message; a whole bad line helps nobody
_RANGE = "is outside the years 0001 to 9999"


class _Refusal(Exception):
    """One bad value, kept until the earliest of a file's is known."""

    def __init__(self, line: int, column: str, message: str) -> None:
        super().__init__(line, column, message)
        self.line = line
        self.column = column
        self.message = message

    def public(self) -> InvalidInput:
        return InvalidInput(f"line {self.line}, {self.column}", self.message)


_Converter = Callable[[Sequence[str], Sequence[int], str], list[int]]


def read_requests_csv(path: str | PathLike[str]) -> Trace:
    """Read a requests CSV (``timestamp``, ``model``, optional token counts) into a trace."""
    with _no_gc():
        return _read_requests(path)


def _read_requests(path: str | PathLike[str]) -> Trace:
    with opened(path) as text:
        return _requests(*chunks_of(text, path))


def _requests(header: list[str], chunks: Iterator[Chunk]) -> Trace:
    names = [name.strip() for name in header]
    positions = _request_columns(names)
    index: dict[str, int] = {}

    def models(values: Sequence[str], lines: Sequence[int], column: str) -> list[int]:
        stripped = list(map(str.strip, values))
        if not all(stripped):
            line = lines[stripped.index("")]
            raise _Refusal(line, column, "blank: give the model's name")
        return [index.setdefault(name, len(index)) for name in stripped]

    converters: dict[str, _Converter] = {
        "timestamp": _instants,
        "model": models,
        "input_tokens": _counts,
        "output_tokens": _counts,
    }
    columns = _columns(chunks, names, {positions[n]: converters[n] for n in positions})
    absent = np.full(len(columns[positions["timestamp"]]), NO_TOKENS, dtype=np.int64)
    return _trace(
        index,
        at=columns[positions["timestamp"]],
        model=columns[positions["model"]],
        inputs=columns[positions["input_tokens"]] if "input_tokens" in positions else absent,
        outputs=columns[positions["output_tokens"]] if "output_tokens" in positions else absent,
    )


def read_azure_trace(path: str | PathLike[str], model: str) -> Trace:
    """Read an Azure LLM inference trace (one service's requests) as requests for ``model``."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidInput("model", f"{model!r}: name the model the trace's requests are for")
    with _no_gc():
        return _read_azure(path, model.strip())


def _read_azure(path: str | PathLike[str], model: str) -> Trace:
    with opened(path) as text:
        return _azure(*chunks_of(text, path), model)


def _azure(header: list[str], chunks: Iterator[Chunk], model: str) -> Trace:
    names = [name.strip() for name in header]
    expected = ",".join(AZURE_COLUMNS)
    if not any(names):
        raise InvalidInput("line 1, header", f"blank: the first line must be {expected}")
    for position, name in enumerate(AZURE_COLUMNS):
        got = names[position] if position < len(names) else None
        if got != name:
            raise InvalidInput(
                f"line 1, column {position + 1}",
                f"{_shown(got)} where the header names {name!r} (the header is {expected})",
            )
    if len(names) > len(AZURE_COLUMNS):
        raise InvalidInput(
            f"line 1, column {len(AZURE_COLUMNS) + 1}",
            f"unknown column {_shown(names[len(AZURE_COLUMNS)])} (the header is {expected})",
        )
    columns = _columns(
        chunks, names, {0: _azure_instants, 1: _required_counts, 2: _required_counts}
    )
    return _trace(
        {model: 0},
        at=columns[0],
        model=np.zeros(len(columns[0]), dtype=np.int64),
        inputs=columns[1],
        outputs=columns[2],
    )


@contextmanager
def _no_gc() -> Iterator[None]:
    # A million rows make a few million small objects (lists, strings, datetimes), and the
    # cyclic collector would walk them hundreds of times for nothing: none forms a cycle.
    # Reading takes about half the time without it.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _request_columns(names: Sequence[str]) -> dict[str, int]:
    """Return each known column's position; refuse a missing, unknown or repeated one."""
    expected = ",".join(REQUEST_COLUMNS)
    if not any(name in REQUEST_COLUMNS for name in names):
        raise InvalidInput(
            "line 1, header",
            f"no known column: the first line names the columns, e.g. {expected} "
            "(timestamp and model are required)",
        )
    positions: dict[str, int] = {}
    for position, name in enumerate(names):
        field = f"line 1, column {position + 1}"
        if name not in REQUEST_COLUMNS:
            raise InvalidInput(field, f"unknown column {_shown(name)} (the columns are {expected})")
        if name in positions:
            raise InvalidInput(field, f"{name!r} is named twice")
        positions[name] = position
    for name in _REQUIRED:
        if name not in positions:
            raise InvalidInput(f"line 1, {name}", f"missing: the header must name {name}")
    return positions


def _columns(
    chunks: Iterator[Chunk], names: Sequence[str], converters: dict[int, _Converter]
) -> dict[int, Ints]:
    """Convert each chunk's columns into arrays; refuse at the first chunk with a bad line."""
    parts: dict[int, list[Ints]] = {position: [] for position in converters}
    for lines, rows in chunks:
        for position, values in _converted(rows, lines, names, converters).items():
            parts[position].append(np.asarray(values, dtype=np.int64))
    return {
        position: np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
        for position, arrays in parts.items()
    }


def _converted(
    rows: list[list[str]],
    lines: list[int],
    names: Sequence[str],
    converters: dict[int, _Converter],
) -> dict[int, list[int]]:
    """Convert each column; refuse the earliest bad value or short or long line."""
    width = len(names)
    bad_width = next((k for k, row in enumerate(rows) if len(row) != width), None)
    checked = rows if bad_width is None else rows[:bad_width]
    checked_lines = lines if bad_width is None else lines[:bad_width]
    columns = list(zip(*checked, strict=True)) if checked else [()] * width
    converted: dict[int, list[int]] = {}
    refusals: list[_Refusal] = []
    for position, convert in converters.items():
        try:
            converted[position] = convert(columns[position], checked_lines, names[position])
        except _Refusal as refusal:
            refusals.append(refusal)
    if refusals:
        raise min(refusals, key=lambda refusal: refusal.line).public()
    if bad_width is not None:
        row, line = rows[bad_width], lines[bad_width]
        if len(row) < width:
            raise InvalidInput(
                f"line {line}, {names[len(row)]}",
                f"missing: the line has {len(row)} values, the header {width} columns",
            )
        raise InvalidInput(
            f"line {line}, column {width + 1}",
            f"{_shown(row[width])} has no column: the header names {width}",
        )
    return converted


def _instants(values: Sequence[str], lines: Sequence[int], column: str) -> list[int]:
    """Read timestamps: ISO 8601 instants with an offset, or Unix seconds."""
    for whole_column in (_whole_seconds, _decimal_seconds, _iso_instants):
        try:
            instants = whole_column(values)
        except (ValueError, TypeError, ArithmeticError):
            continue
        if instants is not None:
            return instants
    # Mixed forms or a bad value: one at a time, naming the line of the first bad one.
    return [_instant_us(text, line, column) for text, line in zip(values, lines, strict=True)]


def _whole_seconds(values: Sequence[str]) -> list[int] | None:
    seconds = list(map(int, values))
    if seconds and not _EARLIEST_S <= min(seconds) <= max(seconds) <= _LATEST_S:
        return None
    return [s * SECOND_US for s in seconds]


def _decimal_seconds(values: Sequence[str]) -> list[int] | None:
    list(map(float, values))  # the forms _instant_us reads as seconds, no others
    with decimal.localcontext(_DECIMAL):
        exact = list(map(Decimal, values))
        if not all(map(Decimal.is_finite, exact)):
            return None
        micros = [int((value * _MILLION).to_integral_value()) for value in exact]
    if micros and not EARLIEST_US <= min(micros) <= max(micros) <= LATEST_US:
        return None
    return micros


def _iso_instants(values: Sequence[str]) -> list[int] | None:
    moments = list(map(datetime.fromisoformat, values))
    if any(moment.tzinfo is None for moment in moments):
        return None
    since = map(operator.sub, moments, repeat(_EPOCH))
    micros = list(map(operator.floordiv, since, repeat(_ONE_US)))
    if micros and not EARLIEST_US <= min(micros) <= max(micros) <= LATEST_US:
        return None
    return micros


def _instant_us(text: str, line: int, column: str) -> int:
    """Read one timestamp, refusing it naming its line."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        return _iso_us(text, line, column)
    if math.isnan(seconds) or (math.isinf(seconds) and "n" in text.lower()):
        raise _Refusal(line, column, f"{_shown(text)} is not a finite number of seconds")
    if math.isinf(seconds):  # digits too many for a float
        raise _Refusal(line, column, f"{_shown(text)} {_RANGE}")
    try:
        at = int(text) * SECOND_US
    except ValueError:  # a decimal: exact, where the float would lose microseconds
        try:
            with decimal.localcontext(_DECIMAL):
                at = int((Decimal(text) * _MILLION).to_integral_value())
        except decimal.InvalidOperation:  # a form float reads and Decimal does not
            at = round(seconds * SECOND_US)
    if not EARLIEST_US <= at <= LATEST_US:
        raise _Refusal(line, column, f"{_shown(text)} {_RANGE}")
    return at


def _iso_us(text: str, line: int, column: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise _Refusal(
            line,
            column,
            f"{_shown(text)} is neither ISO 8601 (2026-03-30T08:00:00+02:00) nor Unix seconds",
        ) from None
    if moment.utcoffset() is None:
        raise _Refusal(
            line, column, f"{_shown(text)} has no offset (write it like 2026-03-30T08:00:00+02:00)"
        )
    try:
        at = to_us(moment)
    except OverflowError:  # an offset that carries year 1 or 9999 past datetime's range
        raise _Refusal(line, column, f"{_shown(text)} {_RANGE}") from None
    if not EARLIEST_US <= at <= LATEST_US:
        raise _Refusal(line, column, f"{_shown(text)} {_RANGE}")
    return at


def _azure_instants(values: Sequence[str], lines: Sequence[int], column: str) -> list[int]:
    return [_azure_us(text, line, column) for text, line in zip(values, lines, strict=True)]


def _azure_us(text: str, line: int, column: str) -> int:
    match = _AZURE_TIME.fullmatch(text.strip())
    if match is None:
        raise _Refusal(line, column, f"{_shown(text)} is not YYYY-MM-DD HH:MM:SS.fffffff")
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as error:
        raise _Refusal(line, column, f"{_shown(text)}: {error}") from None
    nanos = int((match.group(7) or "0").ljust(9, "0"))
    at = to_us(moment) + (nanos + 500) // 1000
    if not EARLIEST_US <= at <= LATEST_US:
        raise _Refusal(line, column, f"{_shown(text)} {_RANGE}")
    return at


def _counts(values: Sequence[str], lines: Sequence[int], column: str) -> list[int]:
    """Read token counts: non-negative whole numbers, blank for one not given."""
    digits = "".join(values)
    if (
        digits.isascii()
        and (digits.isdigit() or not digits)
        and max(map(len, values), default=0) <= _COUNT_DIGITS
    ):
        return [int(text) if text else NO_TOKENS for text in values]
    return [_count(text, line, column) for text, line in zip(values, lines, strict=True)]


def _required_counts(values: Sequence[str], lines: Sequence[int], column: str) -> list[int]:
    counts = _counts(values, lines, column)
    if NO_TOKENS in counts:
        raise _Refusal(lines[counts.index(NO_TOKENS)], column, "missing: give a token count")
    return counts


def _count(text: str, line: int, column: str) -> int:
    text = text.strip()
    if not text:
        return NO_TOKENS
    significant = text.lstrip("0")
    if (
        not (text.isascii() and text.isdigit())
        or len(significant) > _COUNT_DIGITS + 1
        or (int(text) >= 2**63)
    ):
        raise _Refusal(line, column, f"{_shown(text)} is not a whole number from 0 to 2**63-1")
    return int(text)


def _trace(
    index: dict[str, int],
    *,
    at: Ints,
    model: Ints,
    inputs: Ints,
    outputs: Ints,
) -> Trace:
    """Build a trace sorted by arrival, its models named in sorted order as ``Trace.of`` does."""
    models = tuple(sorted(index))
    sorted_place = {name: k for k, name in enumerate(models)}
    place = np.empty(len(index), dtype=np.int64)
    for name, seen in index.items():
        place[seen] = sorted_place[name]
    order = np.argsort(at, kind="stable")
    return Trace(
        models=models,
        at_us=at[order],
        model=place[model][order],
        input_tokens=inputs[order],
        output_tokens=outputs[order],
    )


def _shown(value: str | None) -> str:
    if value is None:
        return "nothing"
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "...")
