"""The GPU inventory: NVML where it works, the configuration where it does not."""

from __future__ import annotations

import pytest

from dgxmm.errors import DefinitionError, NotFound
from dgxmm.fleet import (
    Gpu,
    GpuInventory,
    InventorySource,
    NvmlReading,
    parse_gpu_config,
    read_nvml,
)

CONFIGURED = (
    Gpu(index=1, name="configured B", memory_gib=40.0),
    Gpu(index=0, name="configured A", memory_gib=80.0),
)
H100 = Gpu(index=0, name="NVIDIA H100 80GB HBM3", memory_gib=79.6, uuid="GPU-1")


def test_real_nvml_either_lists_gpus_or_says_why_not() -> None:
    reading = read_nvml()
    if reading.gpus:  # a machine with a GPU and its driver
        assert reading.error is None
        assert all(gpu.memory_gib > 0 for gpu in reading.gpus)
    else:
        assert reading.error


def test_without_nvml_the_configuration_is_the_inventory() -> None:
    # Here NVML cannot start (no driver): discovery falls back and says why.
    reading = read_nvml()
    if reading.gpus:
        pytest.skip("this machine has a GPU that NVML can see")
    inventory = GpuInventory.discover(CONFIGURED)
    assert inventory.source is InventorySource.CONFIGURATION
    assert [gpu.index for gpu in inventory.gpus] == [0, 1]
    assert inventory.total_memory_gib == 120.0
    assert reading.error is not None
    assert inventory.note == f"{reading.error}: using the GPUs in the configuration"


def test_nvml_gpus_win_over_the_configuration() -> None:
    inventory = GpuInventory.discover(CONFIGURED, nvml=lambda: NvmlReading(gpus=(H100,)))
    assert inventory.source is InventorySource.NVML
    assert inventory.gpus == (H100,)
    assert inventory.note == "the configuration lists 2 GPUs, NVML found 1: using NVML"


def test_nvml_failing_falls_back_with_its_error() -> None:
    inventory = GpuInventory.discover(
        CONFIGURED, nvml=lambda: NvmlReading(error="NVML cannot start: Driver Not Loaded")
    )
    assert inventory.source is InventorySource.CONFIGURATION
    assert inventory.note.startswith("NVML cannot start: Driver Not Loaded")


def test_nvml_with_no_gpu_and_no_configuration_is_an_empty_inventory() -> None:
    inventory = GpuInventory.discover((), nvml=NvmlReading)
    assert inventory.gpus == ()
    assert inventory.total_memory_gib == 0
    assert inventory.note.startswith("NVML found no GPU")


def test_a_gpu_is_found_by_index() -> None:
    inventory = GpuInventory.discover(CONFIGURED, nvml=NvmlReading)
    assert inventory.gpu(1).name == "configured B"
    with pytest.raises(NotFound, match="no GPU named 7"):
        inventory.gpu(7)


def test_the_configuration_is_read_with_defaults() -> None:
    gpus = parse_gpu_config([{"memory_gib": 80}, {"index": 3, "name": "L40S", "memory_gib": 48}])
    assert gpus == (
        Gpu(index=0, name="GPU 0", memory_gib=80.0),
        Gpu(index=3, name="L40S", memory_gib=48.0),
    )


@pytest.mark.parametrize(
    ("entries", "field"),
    [
        pytest.param([{}], "gpus[0].memory_gib", id="no-memory"),
        pytest.param([{"memory_gib": "80"}], "gpus[0].memory_gib", id="memory-text"),
        pytest.param([{"memory_gib": 0}], "gpus[0].memory_gib", id="memory-zero"),
        pytest.param([{"memory_gib": float("inf")}], "gpus[0].memory_gib", id="memory-inf"),
        pytest.param([{"memory_gib": True}], "gpus[0].memory_gib", id="memory-bool"),
        pytest.param(
            [{"memory_gib": 1}, {"index": -1, "memory_gib": 1}],
            "gpus[1].index",
            id="negative-index",
        ),
        pytest.param(
            [{"memory_gib": 1}, {"index": 0, "memory_gib": 1}], "gpus[1].index", id="twice"
        ),
        pytest.param([{"memory_gib": 1, "name": ""}], "gpus[0].name", id="empty-name"),
        pytest.param([{"memory_gib": 1, "vram": 2}], "gpus[0].vram", id="unknown-field"),
    ],
)
def test_a_configuration_that_cannot_be_used_names_the_field(
    entries: list[dict[str, object]], field: str
) -> None:
    with pytest.raises(DefinitionError) as refused:
        parse_gpu_config(entries)
    assert refused.value.field == field


def test_a_configured_gpu_with_a_number_past_a_floats_range_is_refused_naming_it() -> None:
    # math.isfinite raised OverflowError on the integer (found by the lab's fleet-file tests).
    with pytest.raises(DefinitionError) as refused:
        parse_gpu_config([{"index": 0, "memory_gib": 10**400}])
    assert refused.value.field == "gpus[0].memory_gib"
