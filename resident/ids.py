"""Identifiers: short, time-ordered, unguessable, and readable enough to type."""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case: no i, l, o, u
_lock = threading.Lock()
_last_ms = 0
_counter = 0


def _base32(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """`<prefix>_` + 10 chars of millisecond time + 2 of a per-millisecond counter + 10 random chars.

    Ids sort by creation time within a process (the counter breaks ties within a millisecond),
    and 50 random bits keep ids from different processes or homes from colliding.
    """
    global _last_ms, _counter  # noqa: PLW0603 - one process-wide monotonic sequence
    now_ms = int(time.time() * 1000)
    with _lock:
        if now_ms <= _last_ms:
            now_ms = _last_ms
            _counter += 1
            if _counter >= 1024:
                now_ms += 1
                _counter = 0
        else:
            _counter = 0
        _last_ms = now_ms
        counter = _counter
    random_part = int.from_bytes(os.urandom(7), "big") >> 6
    return f"{prefix}_{_base32(now_ms, 10)}{_base32(counter, 2)}{_base32(random_part, 10)}"
