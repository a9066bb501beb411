"""Paths a request names: on the runtime's machine, and absolute (the runtime's working folder is not the caller's)."""

from __future__ import annotations

from pathlib import Path

from resident.errors import InvalidInput

__all__ = ["absolute"]


def absolute(value: str, what: str) -> Path:
    """`value` as a path, or `InvalidInput` naming `what` when it is relative."""
    path = Path(value)
    if not path.is_absolute():
        raise InvalidInput(f"{what} must be an absolute path, not {value!r}")
    return path
