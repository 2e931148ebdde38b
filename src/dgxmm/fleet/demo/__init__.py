"""dgxmm without a GPU fleet: ``dgxmm serve --demo`` and a loopback Ray cluster.

- ``demo``: the demo's stand-in deployments, their GPUs and a little traffic;
- ``models``: what each demo deployment serves, how busy it is, when it sleeps;
- ``history``: the synthetic weeks before the demo, and the sleeps and wakes they make;
- ``local_cluster``: a Ray cluster on 127.0.0.1 with pretend GPUs, for the demo and the tests.

The fleet's public names are re-exported once, by ``dgxmm.fleet``.
"""

__all__: list[str] = []
