"""Giving freed memory back to the operating system, after large request bodies have left.

glibc's allocator keeps the memory of freed large blocks in its arenas for reuse: after a
dozen held 30 MiB bodies have been answered the process stays hundreds of MiB larger, in
the process that also runs the API, the store and the jobs. ``malloc_trim(0)`` hands the
free pages back. Elsewhere (musl, macOS) there is nothing to call, and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Callable

__all__ = ["GIVE_BACK_AFTER_BYTES", "give_back_memory"]

log = logging.getLogger(__name__)

# Bodies of chat requests are KiB: below this much, what glibc keeps is not worth a trim.
GIVE_BACK_AFTER_BYTES = 16 * 1024 * 1024


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def give_back_memory() -> None:
    """Hand the allocator's free memory back to the system (glibc; elsewhere nothing)."""
    if _TRIM is not None:
        _TRIM(0)
