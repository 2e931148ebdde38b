"""Deployments as records: the row, its checks, the repository and what happens to one.

- ``deployment`` / ``definition`` / ``repo``: the typed row and its states, the checks of a
  definition, ``DeploymentRepo``;
- ``events`` / ``audit`` / ``insights``: what happened, who did what, what a person should
  know;
- ``recorder``: how an action is written down (state, event, audit row in one transaction);
- ``server_log``: a process deployment's server log, read in bounded pieces;
- ``tables``: the fleet's tables on the store's ``metadata``.

The fleet's public names are re-exported once, by ``dgxmm.fleet``.
"""

__all__: list[str] = []
