"""SVG drawn on the server: runs chart, GPU bars, traffic charts, heat map, week strip."""

from dgxmm.server.svg.gpu_bars import gpu_bar as gpu_bar
from dgxmm.server.svg.heatmap import proposal_intervals as proposal_intervals
from dgxmm.server.svg.heatmap import traffic_heatmap as traffic_heatmap
from dgxmm.server.svg.runs import runs_chart as runs_chart
from dgxmm.server.svg.traffic_charts import traffic_chart as traffic_chart
from dgxmm.server.svg.week_strip import week_strip as week_strip

__all__ = [
    "gpu_bar",
    "proposal_intervals",
    "runs_chart",
    "traffic_chart",
    "traffic_heatmap",
    "week_strip",
]
