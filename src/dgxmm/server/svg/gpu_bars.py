"""The GPU memory bars of the Deployments page: its largest holders, the others, then free.

A GPU shared by a hundred deployments would be a hundred slivers nobody can read or hover
(and 1,000 deployments would put a thousand groups on the page): a bar draws the ``TOP``
deployments holding most, one segment for all the others with how many they are, then free.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from dgxmm.fleet import DeploymentState, Gpu, Holding

__all__ = ["TOP", "gpu_bar"]

TOP = 8


def gpu_bar(gpu: Gpu, holdings: Sequence[Holding], *, width: int = 480, top: int = TOP) -> str:
    """Return a bar of one GPU's memory: its ``top`` largest holders, the others, then free."""
    height = 18
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="gpu-bar" role="img" '
        f'data-gpu="{gpu.index}" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}">',
        f"<title>GPU {gpu.index} ({escape(gpu.name)}): "
        f"{sum(h.gib for h in holdings):g} of {gpu.memory_gib:g} GiB held</title>",
        f'<rect class="free" x="0" y="0" width="{width}" height="{height}"/>',
    ]
    # Largest first; a tie keeps the fleet's order, so the bar does not reshuffle between polls.
    ranked = sorted(holdings, key=lambda h: -h.gib)
    shown, others = ranked[:top], ranked[top:]
    x = 0.0
    for holding in shown:
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
    if others:
        gib = sum(h.gib for h in others)
        share = width * min(gib / gpu.memory_gib, 1.0)
        label = f"{len(others)} more"
        parts.append(
            f'<g class="held others" data-others="{len(others)}" data-gib="{gib:g}">'
            f"<title>{label}: {gib:g} GiB</title>"
            f'<rect x="{x:.1f}" y="0" width="{max(share - 1, 1):.1f}" height="{height}"/>'
            + (f'<text x="{x + 4:.1f}" y="13" class="label">{label}</text>' if share > 60 else "")
            + "</g>"
        )
    parts.append("</svg>")
    return "".join(parts)
