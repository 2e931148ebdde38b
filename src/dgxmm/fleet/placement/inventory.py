"""The GPUs of this machine: from NVML where a GPU and its driver exist, else the configuration.

NVML is read through nvidia-ml-py (``pynvml``) once, when the inventory is discovered; the
total memory of a GPU does not change while dgxmm runs. NVML sits behind one seam,
``NvmlReader``, a function that returns an ``NvmlReading``, so that tests can stand in for
a machine with GPUs. On a machine without them (no driver: NVML fails to load), the GPUs
listed in the configuration are the inventory, and the inventory says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from dgxmm.errors import DefinitionError, NotFound

__all__ = [
    "Gpu",
    "GpuInventory",
    "InventorySource",
    "NvmlReader",
    "NvmlReading",
    "parse_gpu_config",
    "read_nvml",
]

_GIB = 1024**3


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """One GPU: its index (as CUDA numbers it), its name and its total memory in GiB."""

    index: int
    name: str
    memory_gib: float
    uuid: str | None = None
    node: str | None = None  # the Ray node it is on; None: this machine

    def __post_init__(self) -> None:
        if self.index < 0:
            raise DefinitionError("index", f"{self.index} must be 0 or more")
        if not (math.isfinite(self.memory_gib) and self.memory_gib > 0):
            raise DefinitionError("memory_gib", f"{self.memory_gib} must be a positive number")


@dataclass(frozen=True, slots=True, kw_only=True)
class NvmlReading:
    """What NVML said: the GPUs, or why it could not be used."""

    gpus: tuple[Gpu, ...] = ()
    error: str | None = None


NvmlReader = Callable[[], NvmlReading]


class InventorySource(Enum):
    """Where the inventory came from."""

    NVML = "nvml"
    CONFIGURATION = "configuration"


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuInventory:
    """The GPUs deployments can be placed on."""

    gpus: tuple[Gpu, ...]
    source: InventorySource
    note: str = ""  # why NVML was not used, or how it differs from the configuration

    @classmethod
    def discover(
        cls, configured: Sequence[Gpu] = (), *, nvml: NvmlReader | None = None
    ) -> GpuInventory:
        """Return NVML's GPUs where NVML works and finds some, else the configured ones."""
        reading = (nvml or read_nvml)()
        if reading.gpus:
            note = ""
            if configured and len(configured) != len(reading.gpus):
                note = (
                    f"the configuration lists {len(configured)} GPUs, NVML found "
                    f"{len(reading.gpus)}: using NVML"
                )
            gpus = tuple(sorted(reading.gpus, key=lambda gpu: gpu.index))
            return cls(gpus=gpus, source=InventorySource.NVML, note=note)
        why = reading.error or "NVML found no GPU"
        return cls(
            gpus=tuple(sorted(configured, key=lambda gpu: gpu.index)),
            source=InventorySource.CONFIGURATION,
            note=f"{why}: using the GPUs in the configuration",
        )

    def gpu(self, index: int) -> Gpu:
        """Return the GPU with this index."""
        for gpu in self.gpus:
            if gpu.index == index:
                return gpu
        raise NotFound("GPU", index)

    @property
    def total_memory_gib(self) -> float:
        """Return the memory of all GPUs together."""
        return sum(gpu.memory_gib for gpu in self.gpus)


def read_nvml() -> NvmlReading:
    """Ask NVML for the GPUs; report its error instead of raising when it cannot be used."""
    try:
        import pynvml
    except ImportError as err:
        return NvmlReading(error=f"nvidia-ml-py is not installed ({err})")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        return NvmlReading(error=f"NVML cannot start: {err}")
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            gpus.append(
                Gpu(
                    index=index,
                    name=_text(pynvml.nvmlDeviceGetName(handle)),
                    memory_gib=pynvml.nvmlDeviceGetMemoryInfo(handle).total / _GIB,
                    uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
                )
            )
    except pynvml.NVMLError as err:
        return NvmlReading(error=f"NVML failed while listing GPUs: {err}")
    finally:
        pynvml.nvmlShutdown()
    return NvmlReading(gpus=tuple(gpus))


def _text(value: str | bytes) -> str:
    # Older nvidia-ml-py releases return bytes.
    return value.decode() if isinstance(value, bytes) else str(value)


def as_finite(value: int | float) -> float | None:
    """Return a number as a finite float, or None: NaN, infinite, or an integer past a float.

    JSON carries integers of any size, and ``math.isfinite(10**400)`` raises OverflowError
    instead of answering, so a check that asked it answered 500.
    """
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def parse_gpu_config(entries: Sequence[Mapping[str, object]]) -> tuple[Gpu, ...]:
    """Read the configuration's GPU list: ``[{"index": 0, "name": ..., "memory_gib": 80}]``.

    ``index`` defaults to the entry's position and ``name`` to ``GPU <index>``; each field
    that cannot be used is refused, naming the entry (``gpus[1].memory_gib``).
    """
    gpus: list[Gpu] = []
    for position, entry in enumerate(entries):
        where = f"gpus[{position}]"
        unknown = set(entry) - {"index", "name", "memory_gib", "uuid"}
        if unknown:
            raise DefinitionError(f"{where}.{sorted(unknown)[0]}", "is not a GPU field")
        index = entry.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise DefinitionError(f"{where}.index", f"{index!r} is not a GPU index (0 or more)")
        memory = entry.get("memory_gib")
        if not isinstance(memory, int | float) or isinstance(memory, bool):
            raise DefinitionError(f"{where}.memory_gib", f"{memory!r} is not a number of GiB")
        finite = as_finite(memory)
        if finite is None:
            raise DefinitionError(f"{where}.memory_gib", "is too large a number of GiB")
        if finite <= 0:
            raise DefinitionError(f"{where}.memory_gib", f"{memory!r} must be positive")
        name = entry.get("name", f"GPU {index}")
        uuid = entry.get("uuid")
        if not isinstance(name, str) or not name:
            raise DefinitionError(f"{where}.name", f"{name!r} is not a name")
        if uuid is not None and not isinstance(uuid, str):
            raise DefinitionError(f"{where}.uuid", f"{uuid!r} is not text")
        if any(gpu.index == index for gpu in gpus):
            raise DefinitionError(f"{where}.index", f"GPU {index} is listed twice")
        gpus.append(Gpu(index=index, name=name, memory_gib=float(memory), uuid=uuid))
    return tuple(gpus)
