"""The ``dgxmm`` command. It never ticks: a store opened here runs no jobs on a schedule."""

from dgxmm.cli.main import app, main

__all__ = ["app", "main"]
