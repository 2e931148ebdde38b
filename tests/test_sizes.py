"""The house's size rule: no module under ``src/`` or ``benchmarks/`` past 500 lines.

A module past 500 lines is a signal to split it by noun (``STYLE.md``); this test makes the
signal a stop, so a change that grows a module past it splits the module in the same change.
A layer's top holds at most a dozen modules, for the same reason: past that, it needs rooms.
Inside a layer, ``server/api/`` and ``server/pages/`` hold one module per URL noun by design,
and the store's ``catalog/`` and ``runs/`` (15 and 14) are the next ones to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import dgxmm

SRC = Path(dgxmm.__file__).parent
BENCHMARKS = SRC.parent.parent / "benchmarks"
MAX_LINES = 500
MAX_TOP_MODULES = 12
# Their top is one module per command group or concern, and is to get rooms with the issue
# that rewrites it (the proxy's data path, issue 46).
CROWDED_FOR_NOW = {"dgxmm.proxy": 15}


def _modules() -> list[Path]:
    found = [p for p in SRC.rglob("*.py") if "migrations" not in p.parts]
    if BENCHMARKS.is_dir():  # an installed package has no benchmarks beside it
        found += BENCHMARKS.rglob("*.py")
    return sorted(found)


def _lines(path: Path) -> int:
    with path.open(encoding="utf-8") as text:
        return sum(1 for _ in text)


def test_no_module_is_past_500_lines() -> None:
    long = {
        str(p.relative_to(SRC.parent.parent)): n for p in _modules() if (n := _lines(p)) > MAX_LINES
    }
    assert long == {}


@pytest.mark.parametrize(
    "package",
    sorted(".".join(p.parent.relative_to(SRC.parent).parts) for p in SRC.glob("*/__init__.py")),
)
def test_no_layer_top_holds_more_than_a_dozen_modules(package: str) -> None:
    folder = SRC.parent.joinpath(*package.split("."))
    top = [p for p in folder.glob("*.py") if p.name not in {"__init__.py", "__main__.py"}]
    assert len(top) <= CROWDED_FOR_NOW.get(package, MAX_TOP_MODULES), sorted(p.name for p in top)
