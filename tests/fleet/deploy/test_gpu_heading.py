"""The Deployments page says where its GPUs come from without reading like an error."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from dgxmm.fleet import Gpu, GpuInventory, InventorySource


@pytest.fixture
def inventory() -> GpuInventory:
    # What serve --demo's pretend GPUs give on a machine without NVIDIA's driver.
    return GpuInventory(
        gpus=(Gpu(index=0, name="Pretend", memory_gib=80.0),),
        source=InventorySource.CONFIGURATION,
        note="NVML Shared Library Not Found: using the GPUs in the configuration",
    )


def test_the_gpu_heading_names_its_source_and_keeps_nvmls_reason_on_hover(
    client: TestClient,
) -> None:
    page = client.get("/deployments").text
    heading = re.search(r"<h2>GPU memory (.*?)</h2>", page, re.S)
    assert heading is not None
    shown = re.sub(r"<[^>]+>", "", heading.group(1))  # the words on the page, not the title
    assert shown == "(as the configuration lists them)"
    assert 'title="NVML Shared Library Not Found: using the GPUs in the configuration"' in page
