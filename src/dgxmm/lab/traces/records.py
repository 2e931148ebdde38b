"""A CSV file read as a stream: its header, then its records a chunk at a time, each record
with the line it begins on.

A trace of 10 million rows read whole made 10 million lists of strings at once (4.4 GiB);
read as a stream, only one chunk's (``CHUNK`` records) are alive at a time, and the readers
(``readers.py``) turn each into arrays before the next is read.

Refusals name the line, as the readers' do: a file that is not UTF-8 the line of its first
bad byte (``"line 7, row"``), a record the CSV module cannot split its first line, a file of
nothing but white space line 1's header. A file that cannot be opened is refused with field
``path``.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path

from dgxmm.errors import InvalidInput

__all__ = ["CHUNK", "Chunk", "chunks_of", "opened"]

CHUNK = 65_536  # records converted at a time: their strings are garbage before the next
Chunk = tuple[list[int], list[list[str]]]  # the lines records begin on, and the records


@contextmanager
def opened(path: str | PathLike[str]) -> Iterator[io.TextIOWrapper]:
    """Open a file as UTF-8 text (a byte-order mark skipped), its lines split as CSV wants."""
    try:
        binary = Path(path).open("rb")  # noqa: SIM115  (the wrapper closes it)
    except OSError as error:
        raise InvalidInput("path", f"{str(path)!r} cannot be read: {error.strerror}") from None
    # newline="" splits lines at \n, \r\n and \r alike and leaves quoted newlines to csv.
    with io.TextIOWrapper(binary, encoding="utf-8-sig", newline="") as text:
        yield text


def chunks_of(
    text: io.TextIOWrapper, path: str | PathLike[str]
) -> tuple[list[str], Iterator[Chunk]]:
    """Return the header, and the non-blank records after it a chunk at a time."""
    if _is_blank(text, path):
        raise InvalidInput("line 1, header", "the file is empty: the first line names the columns")
    text.seek(0)
    records = _records(text, path)
    _, header = next(records)
    return header, _chunked(records)


def _is_blank(text: io.TextIOWrapper, path: str | PathLike[str]) -> bool:
    """Whether the file holds nothing but white space (read up to its first other character)."""
    try:
        while block := text.read(1 << 20):
            if block.strip():
                return False
    except UnicodeDecodeError:
        raise _undecodable(path) from None
    return True


def _chunked(records: Iterator[tuple[int, list[str]]]) -> Iterator[Chunk]:
    while True:
        lines: list[int] = []
        rows: list[list[str]] = []
        for line, row in itertools.islice(records, CHUNK):
            lines.append(line)
            rows.append(row)
        if not rows:
            return
        yield lines, rows


def _records(text: io.TextIOWrapper, path: str | PathLike[str]) -> Iterator[tuple[int, list[str]]]:
    """Yield the header (line 1, even blank) and every non-blank record with its first line."""
    reader = csv.reader(text)
    ended = 0  # the last physical line read: the next record begins after it
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise InvalidInput(f"line {ended + 1}, row", str(error)) from None
        except UnicodeDecodeError:
            raise _undecodable(path) from None
        begins, ended = ended + 1, reader.line_num
        if begins == 1 or row:
            yield begins, row


def _undecodable(path: str | PathLike[str]) -> InvalidInput:
    """Return the refusal of a file that is not UTF-8, naming the line of its first bad byte."""
    # Read again, line by line: a line feed is never part of a UTF-8 sequence, so each line
    # decodes alone, and the first that does not is where the text stops being UTF-8.
    with Path(path).open("rb") as binary:
        for line, raw in enumerate(binary, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return InvalidInput(f"line {line}, row", "not UTF-8 text")
    return InvalidInput("line 1, row", "not UTF-8 text")  # it changed while it was read
