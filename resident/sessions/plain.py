"""Transcripts of the `command` harness: JSONL at `$RESIDENT_TRANSCRIPT`, in either of two shapes.

A command the runtime starts may write Claude Code's own format (any tool that already speaks it)
or the simplest one there is: one `{"role": ..., "text": ...}` object a line, `role` one of
`user`, `assistant`, `tool`, `system` (anything else is kept as `other`), with optional `tool`
(a tool's name) and `at` (epoch seconds or ISO 8601). Each line is read in whichever shape it has.
"""

from __future__ import annotations

import math
from typing import Any

from resident.messages.sessions import TurnKind, TurnRole
from resident.sessions import claude
from resident.sessions.entries import Draft, Entry, Parsed, epoch, not_a_mapping, string
from resident.sessions.lines import Line

__all__ = ["parse"]

_ROLES: dict[str, TurnRole] = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}


def _at(value: Any) -> float | None:
    """Epoch seconds, or an ISO 8601 time."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) and 0 <= value < 1e11 else None
    return epoch(value)


def _plain(line: dict[str, Any]) -> Entry:
    role = _ROLES.get(string(line.get("role")), "other")
    tool = string(line.get("tool"))
    kind: TurnKind = "tool_result" if role == "tool" else "tool_call" if tool and role == "assistant" else "text"
    return Entry(drafts=[Draft(role, kind, string(line.get("text")), tool=tool, at=_at(line.get("at")))],
                 conversational=True)


def _is_plain(line: dict[str, Any]) -> bool:
    return "type" not in line and isinstance(line.get("role"), str) and isinstance(line.get("text"), str)


def parse(lines: list[Line]) -> Parsed:
    """Entries and metadata of a command transcript, line by line in its own shape."""
    meta = claude.meta_of([line.value for line in lines if isinstance(line.value, dict) and not _is_plain(line.value)])
    entries: list[Entry] = []
    for line in lines:
        if not isinstance(line.value, dict):
            entries.append(not_a_mapping(line))
        elif _is_plain(line.value):
            entries.append(_plain(line.value))
        else:
            entries.append(claude.entry_of(line.value))
    return Parsed(meta, entries)
