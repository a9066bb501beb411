"""Revalidation: when an entry's dependencies must be probed again, and what the probes mean together.

An entry handed out as context must have had its dependencies checked within the TTL. If it was
checked longer ago (or never), the runtime probes each dependency: a file's current SHA-256 in its
repository, another entry's current state and version. A probe answers `unchanged`, `changed`
(proof that the entry no longer holds: it is marked stale) or `failed` (nothing could be proved
either way: the entry is left out this time and stays as it is).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from resident.messages.knowledge import KnowledgeEntry

__all__ = ["DEFAULT_TTL", "Probe", "is_fresh", "verdict"]

# Ten minutes: long enough that context for one session's burst of calls probes once, short enough
# that a change to a source file is noticed within a working session.
DEFAULT_TTL = 600.0


@dataclass(frozen=True, slots=True)
class Probe:
    """One dependency's answer."""

    outcome: Literal["unchanged", "changed", "failed"]
    detail: str = ""


def is_fresh(entry: KnowledgeEntry, now: float, ttl: float) -> bool:
    """Whether `entry`'s last successful check is within `ttl` of `now` (a check from the future is not)."""
    return entry.checked_at is not None and entry.checked_at <= now < entry.checked_at + ttl


def verdict(probes: Iterable[Probe]) -> Probe:
    """All the probes of one entry as one answer: any change proves it; else any failure leaves it out."""
    failed: Probe | None = None
    for probe in probes:
        if probe.outcome == "changed":
            return probe
        if probe.outcome == "failed" and failed is None:
            failed = probe
    return failed or Probe("unchanged")
