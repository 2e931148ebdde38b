"""The browser playground's page: ``/playground``, and the files it runs on.

The page holds no data of the server: the jobs engine and its store run in the browser's Web
Worker under Pyodide (``dgxmm.playground``), so it needs no login. Pyodide's runtime, the
tzdata wheel and dgxmm's own wheel are fetched by ``scripts/playground-files`` into
``playground_files/`` beside this package (gitignored) and served from here at
``/playground/files``: the browser loads nothing from any other host. When a file is
missing, the page says which and the command that fetches them.
"""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.server.pages.jobs import CATCHUP_PRESETS, PRESETS, RETRY_PRESETS, ZONE_PRESETS
from dgxmm.server.pages.render import templates

__all__ = ["FETCH_COMMAND", "PLAYGROUND_FILES", "missing_files", "router"]

PLAYGROUND_FILES = Path(__file__).parent.parent / "playground_files"
FETCH_COMMAND = "scripts/playground-files"
RUNTIME = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")

router = APIRouter(include_in_schema=False)


def missing_files(folder: Path) -> list[str]:
    """Return the files the playground needs that ``folder`` lacks (its wheels by manifest)."""
    missing = [name for name in RUNTIME if not (folder / name).is_file()]
    manifest = folder / "manifest.json"
    try:
        wheels = json.loads(manifest.read_text())["wheels"]
    except (OSError, ValueError, KeyError, TypeError):
        return [*missing, "manifest.json (the list of wheels: tzdata, dgxmm)"]
    return missing + [str(w) for w in wheels if not (folder / str(w)).is_file()]


@router.get("/playground", response_class=HTMLResponse)
def playground_page(request: Request) -> Response:
    """The Scheduled jobs of an engine that runs in this browser."""
    return templates.TemplateResponse(
        request,
        "playground.html",
        {
            "missing": missing_files(PLAYGROUND_FILES),
            "command": FETCH_COMMAND,
            "presets": PRESETS,
            "zone_presets": ZONE_PRESETS,
            "retry_presets": RETRY_PRESETS,
            "catchup_presets": CATCHUP_PRESETS,
        },
    )
