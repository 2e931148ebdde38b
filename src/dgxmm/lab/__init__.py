"""The savings lab: request traces replayed through dgxmm's own decisions, against an oracle.

- ``compare``: every policy on one trace and fleet, beside the oracle (``dgxmm lab replay``).
- ``traces/``: where the requests come from (``trace``: a request trace as columns;
  ``readers``: dgxmm's requests CSV, the Azure LLM inference trace; ``workloads``: seeded
  generators and the ``STANDARD`` workloads a benchmark runs).
- ``ledger``: held, freed and cold in DESIGN.md's words (``Footprint``, ``Timeline``,
  ``Ledger``), one accounting for every policy.
- ``oracle``: the two limits: the most memory any policy could free without a cold request
  (the oracle), and the least cost at a price of waiting of any policy that wakes only when a
  request arrives (the lazy oracle).
- ``anchors``: the neighbours' idle timeouts (Ollama, llama-swap, Knative), replayed.
- ``replay/``: dgxmm's policies (the schedules, the idle ladder, the histogram policy, the
  wake lead), the fleet as one machine, through the decider's own functions and the
  product's fit check (``fleet``: the fleet's loop; ``deployment``: one deployment's proxy
  hold, runner's pass and idle policy; ``server``: its server, the phases and the actions
  between them; ``rows``: the runner's schedule rows; ``proposed``: the product's proposer
  on a trace's first weeks, its proposals accepted).
- ``backtest``: a proposal's backtest on held-out weeks, handed to the decider by
  ``dgxmm serve``.
- ``picture``: one day of every policy as an SVG (state bands, request ticks).
- ``durations``: how long the simulated server takes to start, stop, sleep and wake.
- ``fleetfile``: the fleet file (the machine's GPUs and the deployments), read and checked
  (``json_lines``: the line of each of its keys, for its refusals).
"""

from dgxmm.lab.anchors import KNATIVE as KNATIVE
from dgxmm.lab.anchors import LLAMA_SWAP_SLEEP as LLAMA_SWAP_SLEEP
from dgxmm.lab.anchors import OLLAMA as OLLAMA
from dgxmm.lab.anchors import IdleTimeout as IdleTimeout
from dgxmm.lab.anchors import replay_idle_timeout as replay_idle_timeout
from dgxmm.lab.compare import Comparison as Comparison
from dgxmm.lab.compare import Policy as Policy
from dgxmm.lab.compare import compare as compare
from dgxmm.lab.durations import Duration as Duration
from dgxmm.lab.durations import DurationKind as DurationKind
from dgxmm.lab.durations import Empirical as Empirical
from dgxmm.lab.durations import Fixed as Fixed
from dgxmm.lab.durations import LogNormal as LogNormal
from dgxmm.lab.durations import ServerTimes as ServerTimes
from dgxmm.lab.durations import Uniform as Uniform
from dgxmm.lab.durations import duration_from_json as duration_from_json
from dgxmm.lab.fleetfile import LabDeployment as LabDeployment
from dgxmm.lab.fleetfile import LabFleet as LabFleet
from dgxmm.lab.fleetfile import LabSchedule as LabSchedule
from dgxmm.lab.fleetfile import parse_fleet as parse_fleet
from dgxmm.lab.fleetfile import read_fleet as read_fleet
from dgxmm.lab.ledger import Footprint as Footprint
from dgxmm.lab.ledger import Ledger as Ledger
from dgxmm.lab.ledger import Phase as Phase
from dgxmm.lab.ledger import Replayed as Replayed
from dgxmm.lab.ledger import Timeline as Timeline
from dgxmm.lab.ledger import share_of_oracle as share_of_oracle
from dgxmm.lab.oracle import RoundTrip as RoundTrip
from dgxmm.lab.oracle import lazy_oracle as lazy_oracle
from dgxmm.lab.oracle import oracle_timeline as oracle_timeline
from dgxmm.lab.replay.fleet import ScheduleReplay as ScheduleReplay
from dgxmm.lab.replay.fleet import replay_schedules as replay_schedules
from dgxmm.lab.replay.rows import SlotDecision as SlotDecision
from dgxmm.lab.traces.readers import read_azure_trace as read_azure_trace
from dgxmm.lab.traces.readers import read_requests_csv as read_requests_csv
from dgxmm.lab.traces.trace import NO_TOKENS as NO_TOKENS
from dgxmm.lab.traces.trace import Trace as Trace
from dgxmm.lab.traces.workloads import AZURE_CHAT as AZURE_CHAT
from dgxmm.lab.traces.workloads import AZURE_CODE as AZURE_CODE
from dgxmm.lab.traces.workloads import AZURE_DIR as AZURE_DIR
from dgxmm.lab.traces.workloads import STANDARD as STANDARD
from dgxmm.lab.traces.workloads import Envelope as Envelope
from dgxmm.lab.traces.workloads import Workload as Workload
from dgxmm.lab.traces.workloads import bursty as bursty
from dgxmm.lab.traces.workloads import diurnal as diurnal
from dgxmm.lab.traces.workloads import office_hours as office_hours
from dgxmm.lab.traces.workloads import rare as rare
from dgxmm.lab.traces.workloads import tiled as tiled

__all__ = [
    "AZURE_CHAT",
    "AZURE_CODE",
    "AZURE_DIR",
    "KNATIVE",
    "LLAMA_SWAP_SLEEP",
    "NO_TOKENS",
    "OLLAMA",
    "STANDARD",
    "Comparison",
    "Duration",
    "DurationKind",
    "Empirical",
    "Envelope",
    "Fixed",
    "Footprint",
    "IdleTimeout",
    "LabDeployment",
    "LabFleet",
    "LabSchedule",
    "Ledger",
    "LogNormal",
    "Phase",
    "Policy",
    "Replayed",
    "RoundTrip",
    "ScheduleReplay",
    "ServerTimes",
    "SlotDecision",
    "Timeline",
    "Trace",
    "Uniform",
    "Workload",
    "bursty",
    "compare",
    "diurnal",
    "duration_from_json",
    "lazy_oracle",
    "office_hours",
    "oracle_timeline",
    "parse_fleet",
    "rare",
    "read_azure_trace",
    "read_fleet",
    "read_requests_csv",
    "replay_idle_timeout",
    "replay_schedules",
    "share_of_oracle",
    "tiled",
]
