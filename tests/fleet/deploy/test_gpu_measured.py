"""The GPUs as measured beside what the deployments declare (issue 31, "GPUs as measured"),
on the Deployments page and in ``GET /api/deployments``; where nothing is measured, why."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet, GpuGauge, GpuGauges

HTML = {"Accept": "text/html"}
MEASURED = GpuGauges(
    gauges=(
        GpuGauge(index=0, memory_used_gib=61.04, utilization_pct=35.0, temperature_c=54.0),
        GpuGauge(index=1, memory_used_gib=0.5, utilization_pct=None, temperature_c=None),
    )
)
UNMEASURED = GpuGauges(error="nvidia-ml-py is not installed (No module named 'pynvml')")


@pytest.fixture(params=[MEASURED, UNMEASURED], ids=["measured", "unmeasured"])
def reading(request: pytest.FixtureRequest) -> GpuGauges:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet], reading: GpuGauges) -> Fleet:
    return make_fleet(gauge_reader=lambda: reading)


def test_the_page_and_the_api_show_the_measured_beside_the_declared(
    client: TestClient, fleet: Fleet, reading: GpuGauges
) -> None:
    fleet.deployments.create(actor="user:a", **standin("chat", gpus=(0,), awake=40.0))
    page = client.get("/deployments", headers=HTML).text
    listed = client.get("/api/deployments").json()
    first = listed["gpus"][0]
    assert (first["memory_gib"], first["held_gib"]) == (80.0, 0)  # declared (it is stopped)
    assert "0 of 80 GiB held" in page
    if reading is MEASURED:
        assert "measured: 61.0 GiB used · 35 % busy · 54 °C" in page
        assert "measured: 0.5 GiB used</span>" in page  # a board without the other sensors
        assert 'id="gpu-measured-note"' not in page
        assert first["measured"] == {
            "memory_used_gib": 61.04, "utilization_pct": 35.0, "temperature_c": 54.0
        }  # fmt: skip
        assert listed["measured_note"] is None
    else:
        assert "measured:" not in page
        assert "not measured on this machine (no NVML)" in page
        assert f'title="{reading.error}"'.replace("'", "&#39;") in page
        assert first["measured"] is None
        assert listed["measured_note"] == reading.error
