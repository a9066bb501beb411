"""A caller's memory request shaped into the member actor's message: checked values, typed scope, record ids.

Pure: the same shaping serves the owner's calls, a member session's and an app's, so each refuses the
same bad input with the same typed error.
"""

from __future__ import annotations

from resident.errors import InvalidInput
from resident.ids import check_record_id
from resident.memory.banks import parse_scope
from resident.memory.records import ActivationLike, as_activation, clean_query, utf8_text
from resident.messages.bounds import MAX_RECALL_K
from resident.messages.memory import (
    Delegation,
    Principal,
    Recall,
    Receipt,
    Reconcile,
    Reconciled,
    Remember,
)

__all__ = ["recall_message", "reconcile_message", "reconciled", "remember_message"]


def recall_message(
    query: str | bytes,
    k: int,
    *,
    activation: ActivationLike,
    char_budget: int,
    include_inactive: bool = False,
    principal: Principal | None = None,
    delegation: Delegation | None = None,
) -> Recall:
    """A checked `Recall`: a valid query, `k` from 1 to 100, a positive character budget."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_RECALL_K:
        raise InvalidInput(f"k must be a whole number from 1 to {MAX_RECALL_K}, not {k!r}")
    if not isinstance(char_budget, int) or isinstance(char_budget, bool) or char_budget < 1:
        raise InvalidInput(f"char_budget must be a positive number of characters, not {char_budget!r}")
    return Recall(
        query=clean_query(query),
        k=k,
        char_budget=char_budget,
        activation=as_activation(activation),
        include_inactive=include_inactive,
        principal=principal,
        delegation=delegation,
    )


def remember_message(
    text: str | bytes,
    *,
    scope: str,
    summary: str | bytes | None,
    kind: str,
    counterpart: str | None,
    world: str | None,
    importance: float,
    confidence: float,
    activation: ActivationLike,
    supersedes: str | None,
    canonical: bool,
    source: str,
    occurred_at: float | None,
    cites: tuple[str, ...],
    delegation: Delegation | None = None,
) -> Remember:
    """A `Remember` from caller-shaped values (`resident.memory.admission` checks and shapes the rest)."""
    return Remember(
        text=utf8_text(text, "text"),
        scope=parse_scope(scope),
        summary=None if summary is None else utf8_text(summary, "summary"),
        kind=kind,  # type: ignore[arg-type]  # checked by the member actor
        counterpart=counterpart,
        world=world,
        importance=importance,
        confidence=confidence,
        activation=as_activation(activation),
        supersedes=None if supersedes is None else check_record_id(supersedes, "supersedes"),
        canonical=canonical,
        source=source,
        occurred_at=occurred_at,
        cites=tuple(check_record_id(cited, "a cited record id") for cited in cites),
        delegation=delegation,
    )


def reconcile_message(
    record_id: str,
    *,
    rollback: bool,
    readmit: bool,
    text: str | bytes | None,
    canonical: bool | None,
    delegation: Delegation | None = None,
) -> Reconcile:
    return Reconcile(
        id=check_record_id(record_id), rollback=rollback, readmit=readmit,
        text=None if text is None else utf8_text(text, "text"), canonical=canonical, delegation=delegation,
    )


def reconciled(message: Reconcile, answer: object) -> Reconciled:
    """What a reconcile did, from the member actor's answer (a receipt for a readmit)."""
    if isinstance(answer, Receipt):
        return Reconciled(id=message.id, action="readmit", new_id=answer.id, replication=answer.replication)
    return Reconciled(id=message.id, action="rollback")
