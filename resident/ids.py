"""Identifiers: short, time-ordered, unguessable, and readable enough to type.

Every id a caller hands back (`memory show ID`, `--supersedes ID`, an imported record) is
checked by `check_record_id` at the surface it enters by, before it reaches LMDB, whose keys
cannot be empty or longer than 511 bytes: a bad id is a typed `InvalidInput`, never a store error.
The rule is Realm's own (1 to 200 printable ASCII characters, no space), so every id a home
accepts can be replicated.
"""

from __future__ import annotations

import os
import re
import threading
import time

from resident.errors import InvalidInput, shorten

__all__ = ["MAX_ID_LENGTH", "check_record_id", "new_id"]

MAX_ID_LENGTH = 200
_ID = re.compile(rf"[!-~]{{1,{MAX_ID_LENGTH}}}")

_RANDOM_POOL = 4096
_RANDOM_BYTES = 6

_lock = threading.Lock()
_last_ms = 0
_counter = 0
_pool = b""
_pool_at = 0


def _after_fork_in_child() -> None:
    """A forked child must not hand out the random bits its parent already holds in the pool.

    Parent and child go on with the same milliseconds and counter; only the random part tells
    their ids apart, so the child draws its own. The lock may have been held by another thread
    at the fork, which does not exist in the child: it gets a fresh one.
    """
    global _lock, _pool, _pool_at  # noqa: PLW0603 - the process-wide sequence, reset in the new process
    _lock = threading.Lock()
    _pool, _pool_at = b"", 0


os.register_at_fork(after_in_child=_after_fork_in_child)


def check_record_id(value: object, what: str = "record id") -> str:
    """`value` if it can be an id (1-200 printable ASCII characters, no space); `InvalidInput` if not."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if not value:
        raise InvalidInput(f"{what} is empty; pass an id as printed when it was created (like mem_01a2...)")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidInput(f"{what} {shorten(value)} is longer than {MAX_ID_LENGTH} characters; no id is")
    if not _ID.fullmatch(value):
        raise InvalidInput(
            f"{what} {shorten(value)} holds a space, a control character or non-ASCII text; "
            "ids are printable ASCII (like mem_01a2...)"
        )
    return value


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
