"""How dgxmm drives model servers: the ``Backend`` protocol and the backends behind it.

- ``protocol``: ``Backend``, ``BackendKind``, health and stop outcomes, the start-up gate
  (``wait_until_healthy``, and ``pass_gate``: a start or wake through it).
- ``registry``: ``Backends``, the backend of each deployment, built on demand.
- ``process`` / ``external``: a server dgxmm launches and owns, or one already running.
- ``ray`` / ``ray_actor``: a server a named Ray actor launches on a node of a cluster.
- ``client``: vLLM's HTTP surface, through httpx; ``pidfile``: finding our processes again.
- ``pages`` / ``page_process``: the pages every metrics pass reads (``/metrics``, ``/health``),
  read in the calling thread or by a child process.
- ``answers``: ``read_answer``, the one way an answer of a model server is read (a byte bound,
  one deadline).
"""

from dgxmm.fleet.backends.answers import MAX_CONTROL_BYTES as MAX_CONTROL_BYTES
from dgxmm.fleet.backends.answers import Answer as Answer
from dgxmm.fleet.backends.answers import read_answer as read_answer
from dgxmm.fleet.backends.client import ModelServerClient as ModelServerClient
from dgxmm.fleet.backends.external import ExternalBackend as ExternalBackend
from dgxmm.fleet.backends.external import check_base_url as check_base_url
from dgxmm.fleet.backends.page_process import PageProcess as PageProcess
from dgxmm.fleet.backends.pages import InlinePages as InlinePages
from dgxmm.fleet.backends.pages import Page as Page
from dgxmm.fleet.backends.pages import PageRequest as PageRequest
from dgxmm.fleet.backends.pages import Pages as Pages
from dgxmm.fleet.backends.pidfile import PidRecord as PidRecord
from dgxmm.fleet.backends.pidfile import read_pid_file as read_pid_file
from dgxmm.fleet.backends.process import PORT_PLACEHOLDER as PORT_PLACEHOLDER
from dgxmm.fleet.backends.process import ProcessBackend as ProcessBackend
from dgxmm.fleet.backends.process import ProcessSpec as ProcessSpec
from dgxmm.fleet.backends.protocol import DEFAULT_STOP_GRACE_S as DEFAULT_STOP_GRACE_S
from dgxmm.fleet.backends.protocol import LOG_TAIL_MARK as LOG_TAIL_MARK
from dgxmm.fleet.backends.protocol import Backend as Backend
from dgxmm.fleet.backends.protocol import BackendKind as BackendKind
from dgxmm.fleet.backends.protocol import Health as Health
from dgxmm.fleet.backends.protocol import HealthCheck as HealthCheck
from dgxmm.fleet.backends.protocol import HttpTimeouts as HttpTimeouts
from dgxmm.fleet.backends.protocol import StopOutcome as StopOutcome
from dgxmm.fleet.backends.protocol import wait_until_healthy as wait_until_healthy
from dgxmm.fleet.backends.ray import RayBackend as RayBackend
from dgxmm.fleet.backends.ray import RaySpec as RaySpec
from dgxmm.fleet.backends.registry import Backends as Backends
from dgxmm.fleet.backends.registry import run_dir_of as run_dir_of

__all__ = [
    "DEFAULT_STOP_GRACE_S",
    "LOG_TAIL_MARK",
    "MAX_CONTROL_BYTES",
    "PORT_PLACEHOLDER",
    "Answer",
    "Backend",
    "BackendKind",
    "Backends",
    "ExternalBackend",
    "Health",
    "HealthCheck",
    "HttpTimeouts",
    "InlinePages",
    "ModelServerClient",
    "Page",
    "PageProcess",
    "PageRequest",
    "Pages",
    "PidRecord",
    "ProcessBackend",
    "ProcessSpec",
    "RayBackend",
    "RaySpec",
    "StopOutcome",
    "check_base_url",
    "read_answer",
    "read_pid_file",
    "run_dir_of",
    "wait_until_healthy",
]
