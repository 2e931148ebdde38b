"""The GPUs as measured (NVML's memory used, utilisation, temperature), read through the same
calls as on a machine with GPUs. This machine has none, so NVML is a stand-in module that
answers those calls as ``pynvml`` does, including its errors."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from dgxmm.clock import ManualClock
from dgxmm.fleet import GpuGauges, GpuMeter, read_gauges
from dgxmm.time_units import SECOND_US

GIB = 1024**3


class NVMLError(Exception):
    pass


class NVMLErrorNotSupported(NVMLError):
    pass


def fake_nvml(boards: list[dict[str, Any]], *, start_fails: bool = False) -> Any:
    """A module with pynvml's calls over ``boards`` (used bytes, gpu %, temperature or None)."""
    calls: list[str] = []

    def init() -> None:
        calls.append("init")
        if start_fails:
            raise NVMLError("Driver Not Loaded")

    def temperature(handle: int, sensor: int) -> int:
        assert sensor == 0  # NVML_TEMPERATURE_GPU
        value = boards[handle]["temperature"]
        if value is None:
            raise NVMLErrorNotSupported("Not Supported")
        return int(value)

    return SimpleNamespace(
        calls=calls,
        NVMLError=NVMLError,
        NVMLError_NotSupported=NVMLErrorNotSupported,
        NVML_TEMPERATURE_GPU=0,
        nvmlInit=init,
        nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetCount=lambda: len(boards),
        nvmlDeviceGetHandleByIndex=lambda index: index,
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(used=boards[h]["used"], total=80 * GIB),
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=boards[h]["busy"], memory=0),
        nvmlDeviceGetTemperature=temperature,
    )


def test_it_reads_each_gpus_memory_use_and_load_and_heat() -> None:
    nvml = fake_nvml([
        {"used": 61 * GIB, "busy": 35, "temperature": 54},
        {"used": GIB // 2, "busy": 0, "temperature": None},  # a board without the sensor
    ])  # fmt: skip
    read = read_gauges(nvml)
    assert read.error is None
    first, second = read.gauges
    assert (first.memory_used_gib, first.utilization_pct, first.temperature_c) == (61.0, 35.0, 54.0)
    assert (second.memory_used_gib, second.temperature_c) == (0.5, None)
    assert read.of(1) is second
    assert read.of(7) is None
    assert nvml.calls == ["init", "shutdown"]


def test_without_nvml_nothing_is_measured_and_it_says_why() -> None:
    read = read_gauges(fake_nvml([], start_fails=True))
    assert read == GpuGauges(error="NVML cannot start: Driver Not Loaded")


def test_the_meter_reads_nvml_again_only_after_five_seconds() -> None:
    clock = ManualClock(0)
    reads: list[int] = []

    def reader() -> GpuGauges:
        reads.append(clock.now_us())
        return GpuGauges(error="counted")

    meter = GpuMeter(clock, reader)
    meter.read()
    clock.advance(4 * SECOND_US)
    meter.read()
    clock.advance(SECOND_US)
    meter.read()
    assert reads == [0, 5 * SECOND_US]
