"""The browser playground's engine: the jobs engine and a store over SQLite, under Pyodide.

Imported inside the browser's Web Worker (``server/static/playground/worker.mjs``), where only
the standard library, ``tzdata`` and this wheel are loaded: nothing here may import the store,
the fleet or the server.
"""

from dgxmm.playground.catalog import NO_FILES, Catalog, JobSpec, SavedQuery
from dgxmm.playground.engine import Playground

__all__ = ["NO_FILES", "Catalog", "JobSpec", "Playground", "SavedQuery"]
