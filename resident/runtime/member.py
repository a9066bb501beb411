"""`rt.member(name)`: one member's memory calls, blocking and awaitable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from resident.actors.substrate import MAX_RECALL_K
from resident.errors import InvalidInput, ResidentError
from resident.ids import check_record_id
from resident.memory.banks import parse_scope
from resident.memory.records import ActivationLike, as_activation, clean_query, utf8_text
from resident.messages.memory import (
    Delegation,
    Forget,
    GetRecord,
    MemoryRecord,
    Principal,
    Recall,
    RecallHit,
    Receipt,
    Reconcile,
    Reconciled,
    Remember,
)

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = [
    "ActivationLike",
    "Member",
    "as_activation",
    "recall_message",
    "reconcile_message",
    "reconciled",
    "remember_message",
]

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


class Member:
    """A member's memory surface. Every call has an awaitable twin (`aremember`, `arecall`, ...)."""

    def __init__(self, runtime: Runtime, name: str) -> None:
        self._runtime = runtime
        self.name = name

    def __repr__(self) -> str:
        return f"<Member {self.name}>"

    def remember(
        self,
        text: str | bytes,
        *,
        scope: str = "AGENT_CORE",
        summary: str | bytes | None = None,
        kind: str = "experience",
        counterpart: str | None = None,
        world: str | None = None,
        importance: float = 0.5,
        confidence: float = 1.0,
        activation: ActivationLike = None,
        supersedes: str | None = None,
        canonical: bool = False,
        source: str = "manual",
        occurred_at: float | None = None,
        cites: tuple[str, ...] = (),
        timeout: float | None = None,
    ) -> Receipt:
        """Admit a memory durably; the receipt's `replication` is `pending` until Realm accepts it."""
        message = remember_message(
            text, scope=scope, summary=summary, kind=kind, counterpart=counterpart, world=world,
            importance=importance, confidence=confidence, activation=activation, supersedes=supersedes,
            canonical=canonical, source=source, occurred_at=occurred_at, cites=cites,
        )
        return self._runtime._internal.admissions.remember(self.name, message, timeout)

    async def aremember(
        self,
        text: str | bytes,
        *,
        scope: str = "AGENT_CORE",
        summary: str | bytes | None = None,
        kind: str = "experience",
        counterpart: str | None = None,
        world: str | None = None,
        importance: float = 0.5,
        confidence: float = 1.0,
        activation: ActivationLike = None,
        supersedes: str | None = None,
        canonical: bool = False,
        source: str = "manual",
        occurred_at: float | None = None,
        cites: tuple[str, ...] = (),
        timeout: float | None = None,
    ) -> Receipt:
        """`remember` for asyncio hosts: awaits the durable write without blocking the loop."""
        message = remember_message(
            text, scope=scope, summary=summary, kind=kind, counterpart=counterpart, world=world,
            importance=importance, confidence=confidence, activation=activation, supersedes=supersedes,
            canonical=canonical, source=source, occurred_at=occurred_at, cites=cites,
        )
        return await self._runtime._internal.admissions.aremember(self.name, message, timeout)

    def remember_many(
        self, items: Iterable[Mapping[str, Any]], *, timeout: float | None = None
    ) -> list[Receipt | ResidentError]:
        """Admit many memories at once: each item is a mapping of `remember`'s fields (`text`, and any of
        its options). Valid items become durable together, in one commit; one outcome per item, in
        order: its receipt, or the error that refused it (the other items are written all the same).
        """
        return self._runtime._internal.admissions.remember_many(self.name, items, timeout)

    async def aremember_many(
        self, items: Iterable[Mapping[str, Any]], *, timeout: float | None = None
    ) -> list[Receipt | ResidentError]:
        """`remember_many` for asyncio hosts."""
        return await self._runtime._internal.admissions.aremember_many(self.name, items, timeout)

    def recall(
        self,
        query: str | bytes,
        k: int = 10,
        *,
        activation: ActivationLike = None,
        char_budget: int = 8_000,
        include_inactive: bool = False,
        timeout: float | None = None,
    ) -> list[RecallHit]:
        """The member's best-matching served memories (at most `k`, within `char_budget` characters)."""
        message = recall_message(
            query, k, activation=activation, char_budget=char_budget, include_inactive=include_inactive
        )
        hits: list[RecallHit] = self._runtime.ask_member(self.name, message, timeout)
        return hits

    async def arecall(
        self,
        query: str | bytes,
        k: int = 10,
        *,
        activation: ActivationLike = None,
        char_budget: int = 8_000,
        include_inactive: bool = False,
        timeout: float | None = None,
    ) -> list[RecallHit]:
        message = recall_message(
            query, k, activation=activation, char_budget=char_budget, include_inactive=include_inactive
        )
        hits: list[RecallHit] = await self._runtime.ask_member_async(self.name, message, timeout)
        return hits

    def get(self, record_id: str, *, timeout: float | None = None) -> MemoryRecord:
        """One record by id; `RecordWithheld` (with state and reason) if Realm withheld it."""
        message = GetRecord(id=check_record_id(record_id))
        record: MemoryRecord = self._runtime.ask_member(self.name, message, timeout)
        return record

    async def aget(self, record_id: str, *, timeout: float | None = None) -> MemoryRecord:
        message = GetRecord(id=check_record_id(record_id))
        record: MemoryRecord = await self._runtime.ask_member_async(self.name, message, timeout)
        return record

    def forget(self, record_id: str, *, reason: str = "", timeout: float | None = None) -> None:
        """Retract a record: it stays stored, marked retracted, and is no longer recalled."""
        self._runtime.ask_member(self.name, Forget(id=check_record_id(record_id), reason=reason), timeout)

    async def aforget(self, record_id: str, *, reason: str = "", timeout: float | None = None) -> None:
        await self._runtime.ask_member_async(self.name, Forget(id=check_record_id(record_id), reason=reason), timeout)

    def reconcile(
        self,
        record_id: str,
        *,
        rollback: bool = False,
        readmit: bool = False,
        text: str | bytes | None = None,
        canonical: bool | None = None,
        timeout: float | None = None,
    ) -> Reconciled:
        """Settle a withheld (conflict/invalidated) record: roll it back, or re-admit it corrected.

        `readmit=True` writes a new version (with `text` and `canonical` if given) that supersedes
        the withheld one; it must change what Realm objected to, and stays withheld
        (`pending_review`) until Realm accepts it. `rollback=True` retracts the local write.
        """
        message = reconcile_message(record_id, rollback=rollback, readmit=readmit, text=text, canonical=canonical)
        return reconciled(message, self._runtime.ask_member(self.name, message, timeout))

    async def areconcile(
        self,
        record_id: str,
        *,
        rollback: bool = False,
        readmit: bool = False,
        text: str | bytes | None = None,
        canonical: bool | None = None,
        timeout: float | None = None,
    ) -> Reconciled:
        message = reconcile_message(record_id, rollback=rollback, readmit=readmit, text=text, canonical=canonical)
        return reconciled(message, await self._runtime.ask_member_async(self.name, message, timeout))
