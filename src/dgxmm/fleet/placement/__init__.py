"""Where a deployment's GPUs are: this machine's and a Ray cluster's, and what fits on them.

- ``inventory`` / ``config``: the machine's GPUs, from NVML or ``config.json``;
- ``fit``: the one fit model (``Holding``, ``GpuFit``, ``Fit``) and the eviction plans, on any
  set of GPUs;
- ``cluster`` / ``nodes``: a Ray cluster's nodes and their GPUs, and the same fit asked of
  each node for ray deployments.
- ``placer``: ``Placer``, the fit and eviction plan of one deployment beside the others as
  their rows are now, and the node a ray deployment's start chose, written down.

The fleet's public names are re-exported once, by ``dgxmm.fleet``.
"""

__all__: list[str] = []
