"""Where a replay's requests come from: a trace, read from a file or generated.

- ``trace``: a request trace as columns (arrivals, model, token counts);
- ``readers``: traces read from files (dgxmm's requests CSV, the Azure LLM inference trace);
- ``workloads``: seeded generators (office hours, diurnal, bursty, rare, a real hour tiled)
  and the ``STANDARD`` workloads a benchmark runs.

The lab's public names are re-exported once, by ``dgxmm.lab``.
"""

__all__: list[str] = []
