"""A deployment's metrics: reading ``/metrics``, and the per-minute rollups built from it.

- ``prometheus``: the Prometheus text format, read into ``Exposition`` / ``Series``.
- ``sample``: one ``/metrics`` page as a ``MetricsSample``; the ``MetricsDelta`` between two.
- ``rollups``: ``Rollup``, one deployment's minute, and the arithmetic of building one; the
  rollups read back in bulk, as columns (``read_rollup_columns``, for the traffic profiles).
- ``metrics``: ``Metrics``, the service that samples, keeps request activity and rolls up.
- ``scrapes``: ``ScrapePool``, the threads of a scrape pass: every target read at once, a
  hung one holding up no other.

The package exports what the backends need below them (the format, the sample, the rollup
row). ``Metrics`` reads the backends and the deployments, so it is exported by
``dgxmm.fleet`` instead: from here it would close a loop ``backends`` -> ``metrics``.
"""

from dgxmm.fleet.metrics.prometheus import Exposition as Exposition
from dgxmm.fleet.metrics.prometheus import Series as Series
from dgxmm.fleet.metrics.prometheus import parse_exposition as parse_exposition
from dgxmm.fleet.metrics.rollups import DEFAULT_RETENTION_DAYS as DEFAULT_RETENTION_DAYS
from dgxmm.fleet.metrics.rollups import RETENTION_SETTING as RETENTION_SETTING
from dgxmm.fleet.metrics.rollups import Rollup as Rollup
from dgxmm.fleet.metrics.rollups import RollupColumns as RollupColumns
from dgxmm.fleet.metrics.rollups import read_rollup_columns as read_rollup_columns
from dgxmm.fleet.metrics.sample import MetricsDelta as MetricsDelta
from dgxmm.fleet.metrics.sample import MetricsSample as MetricsSample
from dgxmm.fleet.metrics.sample import SleepState as SleepState
from dgxmm.fleet.metrics.sample import delta_between as delta_between
from dgxmm.fleet.metrics.sample import sample_from_text as sample_from_text

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "RETENTION_SETTING",
    "Exposition",
    "MetricsDelta",
    "MetricsSample",
    "Rollup",
    "RollupColumns",
    "Series",
    "SleepState",
    "delta_between",
    "parse_exposition",
    "read_rollup_columns",
    "sample_from_text",
]
