"""Sending: what a webhook is sent, and how, one lane per channel.

- ``bodies``: the JSON of a channel's format, its markup escaped, and its signature;
- ``attempt``: one POST with one deadline for all of it;
- ``lanes``: one task per channel on the alerts' own loop;
- ``sender``: the claims, the attempts' records, the retries.

The alerts' public names are re-exported once, by ``dgxmm.alerts``.
"""

__all__: list[str] = []
