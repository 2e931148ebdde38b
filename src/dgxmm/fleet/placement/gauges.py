"""The GPUs as measured: memory used, utilisation and temperature, read from NVML.

The inventory (``inventory.py``) holds what does not change while dgxmm runs, each GPU's total
memory; what the deployments declare is held against it (``fit.py``). These gauges are what
the driver says now, shown beside the declared figures (issue 31, "GPUs as measured"), as
GPUStack shows both: a deployment that uses more than it declares shows as a gap between the
two. Read through the same library as the inventory (``pynvml``), on a seam of its own
(``GaugeReader``) so that a test stands in for a machine with GPUs. Where NVML cannot be
used (no driver, pretend GPUs, the package missing) nothing is measured and the reading says
why. A measure one GPU does not support (a temperature on some boards) is None on its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dgxmm.clock import Clock
from dgxmm.time_units import SECOND_US

__all__ = ["GaugeReader", "GpuGauge", "GpuGauges", "GpuMeter", "read_gauges"]

_GIB = 1024**3
_FRESH_US = 5 * SECOND_US  # a page polled every 2 s by many consoles reads NVML once in 5 s


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuGauge:
    """One GPU as measured now; a measure its board does not give is None."""

    index: int
    memory_used_gib: float | None
    utilization_pct: float | None
    temperature_c: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuGauges:
    """Every GPU's gauges, or why none was measured."""

    gauges: tuple[GpuGauge, ...] = ()
    error: str | None = None

    def of(self, index: int) -> GpuGauge | None:
        """Return the gauge of GPU ``index``, or None when it was not measured."""
        return next((gauge for gauge in self.gauges if gauge.index == index), None)


GaugeReader = Callable[[], GpuGauges]


def read_gauges(nvml: Any = None) -> GpuGauges:
    """Ask NVML (``nvml``: the ``pynvml`` module, imported when None) for every GPU's gauges."""
    if nvml is None:
        try:
            import pynvml
        except ImportError as err:
            return GpuGauges(error=f"nvidia-ml-py is not installed ({err})")
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        return GpuGauges(error=f"NVML cannot start: {err}")
    try:
        gauges = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            used = _measure(nvml, nvml.nvmlDeviceGetMemoryInfo, handle, "used")
            busy = _measure(nvml, nvml.nvmlDeviceGetUtilizationRates, handle, "gpu")
            heat = _measure(nvml, nvml.nvmlDeviceGetTemperature, handle, None)
            gauges.append(
                GpuGauge(
                    index=index, memory_used_gib=used, utilization_pct=busy, temperature_c=heat
                )
            )
    except nvml.NVMLError as err:
        return GpuGauges(error=f"NVML failed while reading the GPUs: {err}")
    finally:
        nvml.nvmlShutdown()
    return GpuGauges(gauges=tuple(gauges))


def _measure(nvml: Any, call: Callable[..., Any], handle: Any, field: str | None) -> float | None:
    """One measure of one GPU (``field`` of what ``call`` answers; memory in GiB); None where
    the board does not give it (NotSupported)."""
    try:
        if field is None:  # the temperature: a number, of the GPU's own sensor
            return float(call(handle, nvml.NVML_TEMPERATURE_GPU))
        value = float(getattr(call(handle), field))
    except nvml.NVMLError_NotSupported:
        return None
    return value / _GIB if field == "used" else value


class GpuMeter:
    """The last gauges, read again once they are older than five seconds (NVML's start is
    not free, and every open console page asks)."""

    def __init__(self, clock: Clock, reader: GaugeReader = read_gauges) -> None:
        self._clock = clock
        self._reader = reader
        self._lock = threading.Lock()
        self._last: tuple[int, GpuGauges] | None = None

    def read(self) -> GpuGauges:
        """Return the gauges, at most five seconds old."""
        now = self._clock.now_us()
        with self._lock:
            if self._last is None or now - self._last[0] >= _FRESH_US:
                self._last = (now, self._reader())
            return self._last[1]
