"""Read the Prometheus text exposition format, as much of it as model servers use.

Enough of format 0.0.4 to read what vLLM's ``/metrics`` serves: ``# HELP`` / ``# TYPE`` and
other comments, labels whose values carry ``\\\\``, ``\\"`` and ``\\n`` escapes (and a trailing
comma), ``+Inf`` / ``-Inf`` / ``NaN`` values, optional timestamps, and OpenMetrics' ``# EOF``
and exemplars (ignored). The stand-in server writes it with ``dgxmm.standin.exposition``.

A line that cannot be read is refused with ``InvalidInput`` naming the line, never skipped:
a sample silently dropped would read as zero traffic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from dgxmm.errors import InvalidInput

__all__ = ["Exposition", "Series", "parse_exposition"]

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# Go's ParseFloat (what Prometheus uses) takes no underscores; Python's float() does.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
_SPECIAL = {"+inf": math.inf, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_UNESCAPE = {"\\": "\\", '"': '"', "n": "\n"}
# The shape nearly every line of a model server's page has: labels without blanks or escapes,
# blanks, a value, nothing after it. A regular expression reads it in one call; any other line
# goes through the careful reading below, which gives the same answer for these. The scrapes
# of a thousand deployments run on the serving interpreter, and reading their pages character
# by character was a third of a scrape's CPU there (issue 28).
_PLAIN_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
_PLAIN_SAMPLE = re.compile(
    r"([a-zA-Z_:][a-zA-Z0-9_:]*)"
    rf"(?:\{{((?:{_PLAIN_LABEL}(?:,{_PLAIN_LABEL})*,?)?)\}})?"
    r"[ \t]+([^\s#]+)"
)
_PLAIN_LABELS = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*)"')


@dataclass(frozen=True, slots=True, kw_only=True)
class Series:
    """One sample line: a metric name, its labels in the order written, a value."""

    name: str
    labels: tuple[tuple[str, str], ...] = ()
    value: float
    timestamp_ms: int | None = None

    def label(self, name: str) -> str | None:
        """Return the value of label ``name``, or None when the line has no such label."""
        for key, value in self.labels:
            if key == name:
                return value
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Exposition:
    """A parsed ``/metrics`` page: every sample line, and the declared type of each family."""

    series: tuple[Series, ...]
    types: Mapping[str, str]

    def named(self, name: str) -> list[Series]:
        """Return the samples called ``name``, in page order."""
        return [s for s in self.series if s.name == name]


def parse_exposition(text: str) -> Exposition:
    """Parse Prometheus text exposition; refuse a line that cannot be read, naming it."""
    series: list[Series] = []
    types: dict[str, str] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r").strip(" \t")
        if not line:
            continue
        if line.startswith("#"):
            parts = line[1:].split(None, 3)
            if len(parts) >= 3 and parts[0] == "TYPE":
                types[parts[1]] = parts[2].lower()
            continue
        try:
            series.append(_parse_sample(line))
        except _Malformed as err:
            raise InvalidInput(f"metrics line {number}", f"{err} in {_excerpt(raw)}") from None
    return Exposition(series=tuple(series), types=types)


class _Malformed(Exception):
    """A sample line that does not follow the format (internal; becomes InvalidInput)."""


def _parse_sample(line: str) -> Series:
    plain = _PLAIN_SAMPLE.fullmatch(line)
    if plain is not None:
        name, written, value = plain.groups()
        return Series(
            name=name,
            labels=tuple(_PLAIN_LABELS.findall(written)) if written else (),
            value=_parse_value(value),
        )
    match = _METRIC_NAME.match(line)
    if match is None:
        raise _Malformed("no metric name at the start")
    name = match.group()
    pos = match.end()
    labels: tuple[tuple[str, str], ...] = ()
    braced = pos < len(line) and line[pos] == "{"
    if braced:
        labels, pos = _parse_labels(line, pos + 1)
    rest = line[pos:]
    # After "}" the value may follow at once; after a bare name a blank must separate it.
    if not braced and rest and rest[0] not in " \t":
        raise _Malformed(f"unexpected {rest[0]!r} after the metric name")
    # An OpenMetrics exemplar ("... # {trace_id="x"} 1.0") follows the value; drop it.
    rest = rest.split("#", 1)[0]
    fields = rest.split()
    if not fields:
        raise _Malformed("no value")
    if len(fields) > 2:
        raise _Malformed(f"unexpected {fields[2]!r} after the value")
    value = _parse_value(fields[0])
    timestamp = None
    if len(fields) == 2:
        if not re.fullmatch(r"-?\d+", fields[1]):
            raise _Malformed(f"timestamp {fields[1]!r} is not whole milliseconds")
        timestamp = int(fields[1])
    return Series(name=name, labels=labels, value=value, timestamp_ms=timestamp)


def _parse_labels(line: str, pos: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """Read ``name="value",...}`` from ``pos``; return the labels and the index past ``}``."""
    labels: list[tuple[str, str]] = []
    while True:
        pos = _skip_blanks(line, pos)
        if pos < len(line) and line[pos] == "}":
            return tuple(labels), pos + 1
        match = _LABEL_NAME.match(line, pos)
        if match is None:
            raise _Malformed(f"bad label name at column {pos + 1}")
        key = match.group()
        pos = _skip_blanks(line, match.end())
        if not line.startswith("=", pos):
            raise _Malformed(f"label {key} is not followed by =")
        pos = _skip_blanks(line, pos + 1)
        if not line.startswith('"', pos):
            raise _Malformed(f"label {key} has no quoted value")
        pos += 1
        chars: list[str] = []
        while True:
            if pos >= len(line):
                raise _Malformed(f"label {key} has no closing quote")
            char = line[pos]
            if char == '"':
                pos += 1
                break
            if char == "\\":
                if pos + 1 >= len(line) or line[pos + 1] not in _UNESCAPE:
                    raise _Malformed(f"label {key} has a bad escape at column {pos + 1}")
                chars.append(_UNESCAPE[line[pos + 1]])
                pos += 2
                continue
            chars.append(char)
            pos += 1
        labels.append((key, "".join(chars)))
        pos = _skip_blanks(line, pos)
        if pos < len(line) and line[pos] == ",":
            pos += 1
        elif pos >= len(line) or line[pos] != "}":
            raise _Malformed(f"expected , or }} after label {key}")


def _skip_blanks(line: str, pos: int) -> int:
    while pos < len(line) and line[pos] in " \t":
        pos += 1
    return pos


def _parse_value(text: str) -> float:
    special = _SPECIAL.get(text.lower())
    if special is not None:
        return special
    if not _NUMBER.fullmatch(text):
        raise _Malformed(f"value {text!r} is not a number")
    return float(text)


def _excerpt(line: str) -> str:
    return repr(line if len(line) <= 120 else line[:117] + "...")
