"""Giving the heap that starting a home freed back to the operating system.

Opening a home builds the substrate's index from LMDB, which allocates and frees tens of megabytes
of temporaries (decoded records, term arrays, stacked vectors). glibc keeps freed memory in its
arenas rather than returning it, so a process that opened a home of 10,000 memories kept about
27 MB of anonymous memory it no longer used (RssAnon 96 MB before `malloc_trim(0)`, 69 MB after,
measured with `bench/process_cost.py`'s home of 10k memories; `bench/RESULTS.md`, "Lighter
process"). One trim after the start costs a few milliseconds and nothing afterwards.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable

__all__ = ["release_freed_heap"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where there is none (another libc, another system)."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return None
    return trim


def release_freed_heap() -> None:
    """Return the heap's free pages to the system (where the C library can)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
