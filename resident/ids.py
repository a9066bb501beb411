"""Identifiers: short, time-ordered, unguessable, and readable enough to type."""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_RANDOM_POOL = 4096
_RANDOM_BYTES = 6

_lock = threading.Lock()
_last_ms = 0
_counter = 0
_pool = b""
_pool_at = 0


def new_id(prefix: str) -> str:
    """`<prefix>_` + 28 hex digits: 48 bits of milliseconds, a 16-bit counter, 48 random bits.

    Ids sort by creation time within a process (the counter breaks ties within a millisecond;
    lower-case hex sorts like the number it spells), and the random bits keep ids from different
    processes or homes from colliding. Random bytes come from the OS in blocks, and hex is encoded
    in C: an id is on the write path of every memory.
    """
    global _last_ms, _counter, _pool, _pool_at  # noqa: PLW0603 - one process-wide monotonic sequence
    now_ms = time.time_ns() // 1_000_000
    with _lock:
        if now_ms <= _last_ms:
            now_ms = _last_ms
            _counter += 1
            if _counter > 0xFFFF:
                now_ms += 1
                _counter = 0
        else:
            _counter = 0
        _last_ms = now_ms
        if _pool_at + _RANDOM_BYTES > len(_pool):
            _pool, _pool_at = os.urandom(_RANDOM_POOL), 0
        random_bytes = _pool[_pool_at : _pool_at + _RANDOM_BYTES]
        _pool_at += _RANDOM_BYTES
        raw = now_ms.to_bytes(6, "big") + _counter.to_bytes(2, "big") + random_bytes
    return f"{prefix}_{raw.hex()}"
