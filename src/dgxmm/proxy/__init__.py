"""The OpenAI-compatible proxy: requests routed by model, held while a deployment wakes.

- ``app``: ``ProxyApp``, the ASGI app of ``/v1/chat/completions``, ``/v1/completions``,
  ``/v1/embeddings`` and ``/v1/models``.
- ``routes``: the deployments by model, cached and checked against the door.
- ``listing``: ``/v1/models``, each model with its state (``ModelState``).
- ``waking``: one bring-up per deployment for all the requests it holds; what a request may
  not bring up.
- ``upstream``: the pass-through to a model server, streamed, hop-by-hop headers dropped.
- ``bounds`` / ``stats`` / ``replies``: the hold's settings, the proxy's numbers, and its
  own answers in OpenAI's error shape.
- ``serving``: ``ProxyServer``, uvicorn on its own port and thread.
- ``connections``: the header timeout and connection cap of the proxy's port and the API's.

See docs/proxy.md.
"""

from dgxmm.proxy.app import OPENAI_PATHS as OPENAI_PATHS
from dgxmm.proxy.app import ProxyApp as ProxyApp
from dgxmm.proxy.bounds import DEFAULT_BOUNDS as DEFAULT_BOUNDS
from dgxmm.proxy.bounds import MAX_HELD_BYTES_SETTING as MAX_HELD_BYTES_SETTING
from dgxmm.proxy.bounds import MAX_HELD_BYTES_TOTAL_SETTING as MAX_HELD_BYTES_TOTAL_SETTING
from dgxmm.proxy.bounds import MAX_HELD_SETTING as MAX_HELD_SETTING
from dgxmm.proxy.bounds import MAX_HOLD_SETTING as MAX_HOLD_SETTING
from dgxmm.proxy.bounds import HoldBounds as HoldBounds
from dgxmm.proxy.bounds import bound_settings as bound_settings
from dgxmm.proxy.bounds import check_bounds as check_bounds
from dgxmm.proxy.bounds import read_bounds as read_bounds
from dgxmm.proxy.checks import CHECK_KEY_HEADER as CHECK_KEY_HEADER
from dgxmm.proxy.connections import API_LIMITS as API_LIMITS
from dgxmm.proxy.connections import PROXY_LIMITS as PROXY_LIMITS
from dgxmm.proxy.connections import ConnectionLimits as ConnectionLimits
from dgxmm.proxy.connections import limited_protocol as limited_protocol
from dgxmm.proxy.listing import ModelState as ModelState
from dgxmm.proxy.listing import model_state as model_state
from dgxmm.proxy.memory import GIVE_BACK_AFTER_BYTES as GIVE_BACK_AFTER_BYTES
from dgxmm.proxy.memory import give_back_memory as give_back_memory
from dgxmm.proxy.replies import NOT_AWAKE as NOT_AWAKE
from dgxmm.proxy.replies import Refusal as Refusal
from dgxmm.proxy.replies import Rejection as Rejection
from dgxmm.proxy.serving import ProxyServer as ProxyServer
from dgxmm.proxy.stats import HOLD_BUCKETS_S as HOLD_BUCKETS_S
from dgxmm.proxy.stats import WAIT_BUCKETS_S as WAIT_BUCKETS_S
from dgxmm.proxy.stats import ProxyStats as ProxyStats
from dgxmm.proxy.stats import StatsSnapshot as StatsSnapshot
from dgxmm.proxy.stats import WaitHistogram as WaitHistogram
from dgxmm.proxy.upstream import LOGIN_COOKIE as LOGIN_COOKIE
from dgxmm.proxy.waking import REQUEST_ACTOR as REQUEST_ACTOR

__all__ = [
    "API_LIMITS",
    "CHECK_KEY_HEADER",
    "DEFAULT_BOUNDS",
    "GIVE_BACK_AFTER_BYTES",
    "HOLD_BUCKETS_S",
    "LOGIN_COOKIE",
    "MAX_HELD_BYTES_SETTING",
    "MAX_HELD_BYTES_TOTAL_SETTING",
    "MAX_HELD_SETTING",
    "MAX_HOLD_SETTING",
    "NOT_AWAKE",
    "OPENAI_PATHS",
    "PROXY_LIMITS",
    "REQUEST_ACTOR",
    "WAIT_BUCKETS_S",
    "ConnectionLimits",
    "HoldBounds",
    "ModelState",
    "ProxyApp",
    "ProxyServer",
    "ProxyStats",
    "Refusal",
    "Rejection",
    "StatsSnapshot",
    "WaitHistogram",
    "bound_settings",
    "check_bounds",
    "give_back_memory",
    "limited_protocol",
    "model_state",
    "read_bounds",
]
