"""What ``proxy.py`` is made of, by noun:

- ``fleet``: the stand-in deployments, the free port, the child process serving dgxmm's proxy;
- ``haproxy``: Debian's HAProxy in front of the same stand-ins, and its config;
- ``load``: the requests (an open loop at a rate, streamed first bytes, clients that go away);
- ``cpu``: the CPU of a target's process, and its rate with no request;
- ``report``: each rate's table, the first bytes, the gone clients, issue 27's targets.
"""

__all__: list[str] = []
