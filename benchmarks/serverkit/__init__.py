"""What ``server.py`` is made of, by noun:

- ``fixture``: the counts (the issue's, or tiny ones), the free port, the database it starts with;
- ``floor``: ``dgxmm serve`` with the floor's static route, and ``Bench``, the client that
  drives it and runs ``http_load.py`` against it;
- ``background``: the long query job, the job switched twice a second, the window clear of the
  minute's system jobs;
- ``figures``: each figure against its floor, in order;
- ``table``: the header, a figure's line, the medians under a p99.
"""

__all__: list[str] = []
