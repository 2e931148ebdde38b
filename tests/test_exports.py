"""Each package's face: ``__all__`` is exactly the names its ``__init__.py`` binds.

A name imported into a package but left out of ``__all__`` is exported by accident; a name in
``__all__`` the package does not bind is a promise it breaks (httpx's
``test_all_imports_are_exported`` is the model).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import dgxmm

SRC = Path(dgxmm.__file__).parent
PACKAGES = sorted(
    ".".join(path.parent.relative_to(SRC.parent).parts)
    for path in SRC.rglob("__init__.py")
    if "migrations" not in path.parts
)
# The root package holds only the version.
BARE = {"dgxmm"}


def _bound(path: Path) -> tuple[set[str], list[str] | None]:
    """Return the public names an ``__init__.py`` binds, and its ``__all__`` (None without)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    listed: list[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == "__all__":
                    assert node.value is not None
                    listed = list(ast.literal_eval(node.value))
                elif isinstance(target, ast.Name):
                    names.add(target.id)
    return {name for name in names if not name.startswith("_") and name != "annotations"}, listed


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_exactly_what_the_package_binds(package: str) -> None:
    path = SRC.parent.joinpath(*package.split("."), "__init__.py")
    bound, listed = _bound(path)
    if package in BARE:
        assert listed is None
        assert bound == set()
        return
    assert listed is not None, f"{package} has no __all__"
    assert len(listed) == len(set(listed)), f"{package}: a name listed twice"
    assert set(listed) == bound
    module = importlib.import_module(package)
    assert [name for name in listed if not hasattr(module, name)] == []


def test_it_finds_a_name_left_out(tmp_path: Path) -> None:
    init = tmp_path / "__init__.py"
    init.write_text('from os import path as path\nfrom os import sep as sep\n__all__ = ["path"]\n')
    bound, listed = _bound(init)
    assert bound - set(listed or []) == {"sep"}


def test_every_module_says_what_it_is() -> None:
    # docs/architecture.md leads from a concept to its file; the file's docstring says the rest.
    silent = [
        str(path.relative_to(SRC.parent))
        for path in sorted(SRC.rglob("*.py"))
        if "playground_files" not in path.parts
        and ast.get_docstring(ast.parse(path.read_text(), filename=str(path))) is None
    ]
    assert silent == []
