"""Helpers of the lab's tests: the real Azure hour, where the workplace keeps it.

The Azure LLM inference trace 2023 (Patel et al., "Splitwise", ISCA 2024; CC-BY 4.0) lies at
``../shared/data/azure-llm-2023/`` from the project's root. A clone elsewhere has no such
folder: on a developer's machine the tests that read it skip; under ``CI=true`` they fail.
"""

from __future__ import annotations

from pathlib import Path

from support import need

from dgxmm.lab import Trace, read_azure_trace
from dgxmm.lab.workloads import AZURE_DIR

__all__ = ["azure"]


def azure(path: Path, model: str) -> Trace:
    """Read one of the real Azure files as ``model``'s trace (skip, or fail in CI, if absent)."""
    need(path.exists(), f"the Azure trace is not at {AZURE_DIR} (../shared/data from the root)")
    return read_azure_trace(path, model)
