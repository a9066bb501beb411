"""Which recall results are served: the one place every recalled record passes before a caller sees it.

The index ranks from a cache; the store is the truth. Each hit is read again from LMDB (`read`)
and served only if the record still exists, the principal may see it, Realm has not withheld it
(fail-closed: `conflict` and `invalidated` are never served, whatever the index believed), it still
matches its digest (a record edited outside the runtime is withheld), and it is active unless
inactive records were asked for. Served records are cut to the character budget:
results are served whole, best first, until the next would not fit; the best one alone, if over
budget, is served cut (summary first). Every served record counts one recall in its usage.

What the index had not heard yet (a record withheld or retracted a moment ago) comes back beside
the served hits, so the caller can correct its cache, and so do the records that failed their
digest, so the caller can log them; nothing here changes any state or logs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from resident.memory.index import Hit
from resident.memory.integrity import is_intact
from resident.memory.visibility import can_see, is_served
from resident.messages.memory import Lifecycle, MemoryRecord, Principal, RecallHit, ReplicationState

__all__ = ["Served", "select_served"]


@dataclass(frozen=True)
class Served:
    """The hits to serve (their ids are the recalls to count), and the index's stale entries."""

    hits: list[RecallHit]
    withheld: list[tuple[str, ReplicationState]] = field(default_factory=list)
    inactive: list[tuple[str, Lifecycle]] = field(default_factory=list)
    corrupted: list[MemoryRecord] = field(default_factory=list)

    @property
    def used(self) -> list[str]:
        """The ids whose usage (recall count) the serving adds one to."""
        return [hit.id for hit in self.hits]


def select_served(
    principal: Principal,
    hits: Sequence[Hit],
    read: Callable[[str], MemoryRecord | None],
    *,
    k: int,
    char_budget: int,
    include_inactive: bool = False,
) -> Served:
    """At most `k` of the ranked `hits`, as `principal` may be served them within `char_budget` characters.

    `read` gives the record as stored now (None if it is gone); records are read in rank order and
    only until `k` are served.
    """
    served = Served([])
    budget = char_budget
    for hit in hits:
        if len(served.hits) >= k:
            break
        record = read(hit.id)
        if record is None or not can_see(principal, record):
            continue
        if not is_served(record):
            served.withheld.append((record.id, record.replication))
            continue
        if not is_intact(record):
            served.corrupted.append(record)
            continue
        if record.lifecycle != "active" and not include_inactive:
            served.inactive.append((record.id, record.lifecycle))
            continue
        summary, body = record.summary, record.body
        if len(summary) + len(body) > budget:
            if served.hits:
                break
            # The best hit alone is over budget: serve as much of it as fits, summary first.
            summary = summary[:budget]
            body = body[: budget - len(summary)]
        budget -= len(summary) + len(body)
        served.hits.append(_recall_hit(record, hit, summary, body))
    return served


def _recall_hit(record: MemoryRecord, hit: Hit, summary: str, body: str) -> RecallHit:
    return RecallHit(
        id=record.id,
        summary=summary,
        body=body,
        scope=record.scope,
        bank=record.bank,
        kind=record.kind,
        score=float(hit.score),
        semantic=float(hit.semantic),
        keyword=float(hit.keyword),
        temporal=float(hit.temporal),
        replication=record.replication,
        occurred_at=record.occurred_at,
        recorded_at=record.recorded_at,
    )
