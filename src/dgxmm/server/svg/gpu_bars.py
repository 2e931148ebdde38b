"""The GPU memory bars of the Deployments page: a segment per deployment holding some, then free."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from dgxmm.fleet import DeploymentState, Gpu, Holding

__all__ = ["gpu_bar"]


def gpu_bar(gpu: Gpu, holdings: Sequence[Holding], *, width: int = 480) -> str:
    """Return a bar of one GPU's memory: a segment per deployment holding some, then free."""
    height = 18
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="gpu-bar" role="img" '
        f'data-gpu="{gpu.index}" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}">',
        f"<title>GPU {gpu.index} ({escape(gpu.name)}): "
        f"{sum(h.gib for h in holdings):g} of {gpu.memory_gib:g} GiB held</title>",
        f'<rect class="free" x="0" y="0" width="{width}" height="{height}"/>',
    ]
    x = 0.0
    for holding in holdings:
        share = width * min(holding.gib / gpu.memory_gib, 1.0)
        kind = "asleep" if holding.state is DeploymentState.SLEEPING else "awake"
        parts.append(
            f'<g class="held {kind}" data-deployment="{escape(holding.name)}" '
            f'data-gib="{holding.gib:g}"><title>{escape(holding.name)}: {holding.gib:g} GiB '
            f"{kind}</title>"
            f'<rect x="{x:.1f}" y="0" width="{max(share - 1, 1):.1f}" height="{height}"/>'
            + (  # a name only where it has room
                f'<text x="{x + 4:.1f}" y="13" class="label">{escape(holding.name)}</text>'
                if share > 8 * len(holding.name) + 8
                else ""
            )
            + "</g>"
        )
        x += share
    parts.append("</svg>")
    return "".join(parts)
