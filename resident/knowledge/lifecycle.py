"""The lifecycle of a verified-knowledge entry, and which states context preparation may serve.

    candidate ──(acceptance gate)──▶ verified ──(a dependency changed)──▶ stale
        │                               └──(a decision replaced it)──▶ superseded
        └──(a dependency changed)──▶ stale
    legacy_unverified (imported older data): no way out; never served, never promoted

Every transition is an event written in the same transaction as the change and bumps the entry's
version, so a decision taken on a state that changed meanwhile is refused (compare-and-set). The
edges are `ENTRY_TRANSITIONS` (resident.messages.knowledge), the table the store's projection enforces.
Superseded and stale entries keep their events and stay readable; only `verified` is ever served
as context.
"""

from __future__ import annotations

from resident.messages.knowledge import EntryState, KnowledgeEntry

__all__ = ["SERVED", "is_served"]

SERVED: frozenset[EntryState] = frozenset({"verified"})


def is_served(entry: KnowledgeEntry) -> bool:
    """Whether context preparation may hand `entry` out at all (before revalidating it)."""
    return entry.state in SERVED
