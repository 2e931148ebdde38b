"""Workload statistics: every run and skip of every job, per minute, hour and day.

- ``workload``: ``WorkloadStats``, the one lock around everything below, the saved queries
  run per ``Channel``, the merge of two processes' records, the sidecar's JSON;
- ``series``: ``Tier`` and ``Bucket``, the per-minute, hour and day counts and their pruning;
- ``history``: one job's history (``LastRun``, ``SkipRecord``, ``RunCounts``);
- ``overrides``: a system job's schedule and switch as changed (``Override``, ``KEEP``), and
  ``JobOverrides``, where a scheduler keeps them.

Pure like the rest of the engine. Its public names are re-exported once, by ``dgxmm.jobs``;
the room has no face of its own.
"""

__all__: list[str] = []
