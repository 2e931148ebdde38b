"""Where each key and list item of a JSON text is: its line, by the path a check names it by.

``json`` says where a syntax error is, but not where a value that parsed is; a fleet file's
refusal names the field and its line, so the text is walked once more by a small tokenizer
after ``json`` has accepted it. A key's path is its object's, a dot and the key (the
document's own keys bare); a list item's, its list's and ``[i]``. The same walk finds a key
given twice in one object, which ``json`` keeps silently (the last one wins).
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["key_lines", "line_of"]

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_LAST_STEP = re.compile(r"(?:\.[^.\[\]]*|\[\d+\])$")


def key_lines(text: str) -> tuple[dict[str, int], list[str]]:
    """Return the line of each key and list item of valid JSON by its path, and repeated keys.

    A key's path is its object's, a dot and the key (the document's own keys bare), a list
    item's its list's and ``[i]``: the paths the checks name their fields by.
    """
    newlines = [i for i, char in enumerate(text) if char == "\n"]
    lines: dict[str, int] = {}
    twice: list[str] = []
    # Each open container: its path, whether it is an object, its next item's index (lists),
    # the key whose value comes next (objects; None: a key comes next) and its keys so far.
    stack: list[_Open] = []

    def line(offset: int) -> int:
        return bisect.bisect_right(newlines, offset - 1) + 1

    def value_path(offset: int) -> str:
        """Return the path of the value that starts here, recording a list item's line."""
        if not stack:
            lines.setdefault("", line(offset))
            return ""
        top = stack[-1]
        if top.is_object:
            path, top.key = top.key or "", None
            return path
        path = f"{top.path}[{top.items}]"
        top.items += 1
        lines[path] = line(offset)
        return path

    for token in _TOKEN.finditer(text):
        char = token.group()
        if char in "{[":
            stack.append(_Open(path=value_path(token.start()), is_object=char == "{"))
        elif char in "}]":
            if stack:  # always, in valid JSON
                stack.pop()
        elif char in ":,":
            continue
        elif stack and stack[-1].is_object and stack[-1].key is None:  # a key
            top = stack[-1]
            key = json.loads(char) if char.startswith('"') else char
            path = f"{top.path}.{key}" if top.path else key
            if key in top.keys:
                twice.append(path)
            top.keys.add(key)
            lines.setdefault(path, line(token.start()))
            top.key = path
        else:  # a scalar value
            value_path(token.start())
    return lines, twice


@dataclass(slots=True, kw_only=True)
class _Open:
    """A container the tokenizer is inside (mutable: it is the walk's own state)."""

    path: str
    is_object: bool
    items: int = 0
    key: str | None = None
    keys: set[str] = field(default_factory=set)


def line_of(path: str, lines: Mapping[str, int]) -> int | None:
    """Return the line of a field, or of the nearest part around it the file has."""
    while True:
        if path in lines:
            return lines[path]
        if not path:
            return None
        shorter = _LAST_STEP.sub("", path)
        path = "" if shorter == path else shorter
