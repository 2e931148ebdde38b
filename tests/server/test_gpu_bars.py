"""A GPU's bar draws its largest holders and one segment for the others, never one per holder."""

from __future__ import annotations

import re

from dgxmm.fleet import DeploymentState, Gpu, Holding
from dgxmm.server.svg.gpu_bars import TOP, gpu_bar

GPU = Gpu(index=0, name="H100", memory_gib=80.0)


def holding(i: int, gib: float) -> Holding:
    return Holding(deployment_id=i, name=f"d{i:03d}", state=DeploymentState.RUNNING, gib=gib)


def test_it_draws_the_largest_holders_and_the_others_as_one_segment() -> None:
    held = [holding(i, 0.05) for i in range(125)] + [holding(999, 10.0)]
    bar = gpu_bar(GPU, held)
    drawn = re.findall(r'<g class="held (?:awake|asleep)" data-deployment="([^"]+)"', bar)
    assert len(drawn) == TOP
    assert drawn[0] == "d999"  # the largest first
    assert '<g class="held others" data-others="118" data-gib="5.9">' in bar
    assert "of 80 GiB held" in bar  # the title counts every holder: 16.25 GiB
    assert "16.25 of 80 GiB held" in bar


def test_it_draws_no_remainder_when_every_holder_fits() -> None:
    bar = gpu_bar(GPU, [holding(i, 1.0) for i in range(TOP)])
    assert bar.count('<g class="held awake"') == TOP
    assert "others" not in bar
