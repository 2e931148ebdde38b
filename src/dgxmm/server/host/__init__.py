"""The host: the ticker thread, the jobs' worker threads, and what they keep in memory.

- ``host``: ``Host``, which ticks the scheduler and runs jobs on threads of their own;
- ``lease``: the ticker's lease (one instance ticks) and the one-server-per-SQLite refusal;
- ``definitions``: the catalog's user jobs, kept by version;
- ``moves``: the job list's moves in memory, for ``GET /api/changes``;
- ``run_cancels``: a run under way cancelled from any instance;
- ``heap``: the serving interpreter's garbage collector, frozen after each full collection.
"""

from dgxmm.server.host.host import Host, RowParts

__all__ = ["Host", "RowParts"]
