"""Rebuilding state from raw event-log rows that may be damaged: every event that still decodes and
applies is replayed; the rest, and any gap in the sequence, are reported instead of raised."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from resident.errors import ResidentError
from resident.messages.events import decode_event
from resident.store.projection_table import project
from resident.store.view import DictView

__all__ = ["replay_rows"]


def replay_rows(events: Iterable[tuple[bytes, bytes]]) -> tuple[DictView, list[str]]:
    """The state the readable `events` (raw key, raw value; in sequence order) rebuild, and what went wrong."""
    view = DictView()
    problems: list[str] = []
    expected = 1
    for key, value in events:
        seq = int.from_bytes(key, "big")
        if seq > expected:
            problems.append(_gap(expected, seq - 1))
        expected = seq + 1
        try:
            event = decode_event(value)
        except msgspec.DecodeError as error:
            problems.append(f"event {seq} does not decode: {error}")
            continue
        try:
            project(view, event)
        except ResidentError as error:
            # Only a log missing an earlier event refuses here: live, every event applied.
            problems.append(f"event {seq} ({type(event).__name__}) does not replay: {error}")
    return view, problems


def _gap(first: int, last: int) -> str:
    return f"event {first} is missing" if first == last else f"events {first} to {last} are missing"
