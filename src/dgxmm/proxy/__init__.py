"""The OpenAI-compatible proxy: requests routed by model, held while a deployment wakes.

- ``app``: ``ProxyApp``, the ASGI app of ``/v1/chat/completions``, ``/v1/completions``,
  ``/v1/embeddings`` and ``/v1/models``.
- ``routes``: the deployments by model, cached and checked against the door.
- ``waking``: one bring-up per deployment for all the requests it holds; what a request may
  not bring up.
- ``upstream``: the pass-through to a model server, streamed, hop-by-hop headers dropped.
- ``bounds`` / ``stats`` / ``replies``: the hold's settings, the proxy's numbers, and its
  own answers in OpenAI's error shape.
- ``serving``: ``ProxyServer``, uvicorn on its own port and thread.

See docs/proxy.md.
"""

from dgxmm.proxy.app import OPENAI_PATHS as OPENAI_PATHS
from dgxmm.proxy.app import ProxyApp as ProxyApp
from dgxmm.proxy.bounds import DEFAULT_BOUNDS as DEFAULT_BOUNDS
from dgxmm.proxy.bounds import MAX_HELD_SETTING as MAX_HELD_SETTING
from dgxmm.proxy.bounds import MAX_HOLD_SETTING as MAX_HOLD_SETTING
from dgxmm.proxy.bounds import HoldBounds as HoldBounds
from dgxmm.proxy.bounds import check_bounds as check_bounds
from dgxmm.proxy.bounds import read_bounds as read_bounds
from dgxmm.proxy.replies import Refusal as Refusal
from dgxmm.proxy.serving import ProxyServer as ProxyServer
from dgxmm.proxy.stats import HOLD_BUCKETS_S as HOLD_BUCKETS_S
from dgxmm.proxy.stats import ProxyStats as ProxyStats
from dgxmm.proxy.stats import StatsSnapshot as StatsSnapshot
from dgxmm.proxy.waking import REQUEST_ACTOR as REQUEST_ACTOR

__all__ = [
    "DEFAULT_BOUNDS",
    "HOLD_BUCKETS_S",
    "MAX_HELD_SETTING",
    "MAX_HOLD_SETTING",
    "OPENAI_PATHS",
    "REQUEST_ACTOR",
    "HoldBounds",
    "ProxyApp",
    "ProxyServer",
    "ProxyStats",
    "Refusal",
    "StatsSnapshot",
    "check_bounds",
    "read_bounds",
]
