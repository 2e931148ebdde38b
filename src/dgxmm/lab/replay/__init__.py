"""dgxmm's own policies replayed, the fleet as one machine, through the product's functions.

- ``fleet``: the fleet's loop (``replay_fleet``, ``replay_schedules``, ``Rules``,
  ``ScheduleReplay``): the schedules, the idle ladder, the histogram policy, the wake lead,
  and the product's fit check between the deployments;
- ``deployment``: one deployment in a replay (``SimulatedDeployment``): the proxy's hold, the
  runner's pass, and (``idle``, ``IdleSteps``) the idle policy's checks and steps;
- ``server``: its simulated server (``SimulatedServer``): the phases and the actions between;
- ``rows``: the runner's schedule rows and which of their slots are due at a pass;
- ``proposed``: the product's proposer on a trace's first weeks, its proposals accepted.

The lab's public names are re-exported once, by ``dgxmm.lab``.
"""

__all__: list[str] = []
