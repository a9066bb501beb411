"""A member's `remember`, checked and shaped into the write that stores it: the rules in one function.

`admit` is the whole of a remember's pure work: the grant a delegated call works under narrows
the scopes it may write, the member must belong to the bank's world, the input must be sound
(text, kind, weights, times no more than a day ahead), a superseded record must be one the caller
may read, a cited one one it may see, and the record is shaped with its content digest. The member
actor calls it for the writes it makes itself (a readmit), and callers call it in their own thread
(`rt.member(name).remember`), so both paths accept and refuse exactly the same inputs.

It reads nothing mutable of its own: what it needs from the store (does the bank exist yet? the
record being superseded) comes through `AdmissionReads`, answered from a short LMDB read by
whoever calls. The member's engagement and skill set play no part in a write; they stay with the
member actor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import msgspec

from resident.errors import NotVisible
from resident.memory.banks import runtime_bank
from resident.memory.readmit import check_readmit
from resident.memory.records import make_record
from resident.memory.visibility import can_write, check_within_grant, readable_record, visible_record
from resident.messages.memory import (
    BankCreated,
    Delegation,
    MemoryRecord,
    Principal,
    Receipt,
    RecordAdmitted,
    RecordSuperseded,
    Remember,
)
from resident.messages.store import Commit

__all__ = ["Admission", "AdmissionReads", "acting_principal", "admit"]


class AdmissionReads(Protocol):
    """What admitting a remember reads from the store."""

    def bank_exists(self, name: str) -> bool:
        """Whether bank `name` is stored (a bank, once created, is never deleted)."""
        ...

    def record(self, record_id: str) -> MemoryRecord | None:
        """The stored record `record_id`, if there is one."""
        ...


@dataclass(frozen=True, slots=True)
class Admission:
    """A remember ready to write: one `Commit` (the bank on its first use, the record, what it
    supersedes) that carries the receipt its caller gets once it is durable."""

    commit: Commit
    receipt: Receipt


def acting_principal(member: Principal, delegation: Delegation | None) -> Principal:
    """Who a call acts as: the member, narrowed to its grant's scopes when a session calls."""
    if delegation is None:
        return member
    return msgspec.structs.replace(member, grant=delegation.grant, scopes=delegation.scopes)


def admit(
    member: Principal,
    message: Remember,
    reads: AdmissionReads,
    *,
    record_id: str,
    now: float,
    replacing: MemoryRecord | None = None,
) -> Admission:
    """Check `message` as `member`'s write and shape it; raises the typed error that refuses it.

    `replacing` is a withheld record that a reconcile re-admits: the one write allowed to
    supersede a withheld record, which must change what Realm objected to and stays withheld
    (`pending_review`) itself until Realm accepts it.
    """
    principal = acting_principal(member, message.delegation)
    bank = runtime_bank(message.scope, member.name, counterpart=message.counterpart, world=message.world, at=now)
    check_within_grant(principal, bank.scope, f"bank {bank.name}")
    if not can_write(member, bank):
        raise NotVisible(
            f"{member.name} is not in world {message.world!r}; its worlds are: {', '.join(member.worlds) or 'none'}"
        )
    superseded = None
    if replacing is not None:
        superseded = RecordSuperseded(at=now, id=replacing.id, by=record_id)
    elif message.supersedes is not None:
        old = readable_record(principal, message.supersedes, reads.record(message.supersedes))
        superseded = RecordSuperseded(at=now, id=old.id, by=record_id)
    if replacing is None:
        # A citation is a link to a record, never a free string (a path, a URL): only records the
        # caller can see may be cited, so no cite names something outside the home or leaks one.
        for cited in message.cites:
            visible_record(principal, cited, reads.record(cited))
    record = make_record(
        record_id=record_id,
        owner=bank.owner,
        scope=bank.scope,
        bank=bank.name,
        text=message.text,
        summary=message.summary,
        kind=message.kind,
        counterpart=bank.counterpart,
        world=bank.world,
        importance=message.importance,
        importance_reason=message.importance_reason,
        confidence=message.confidence,
        activation=message.activation,
        supersedes=message.supersedes,
        canonical=message.canonical,
        delegated=message.delegation is not None,
        source=message.source,
        occurred_at=message.occurred_at,
        cites=message.cites,
        author=member.name,
        now=now,
    )
    if replacing is not None:
        check_readmit(replacing, record)
        record = msgspec.structs.replace(record, replication="pending_review")
    # A bank is created with its first write; creating it twice (two first writes at once) is a no-op.
    before = () if reads.bank_exists(bank.name) else (BankCreated(at=now, bank=bank),)
    after = () if superseded is None else (superseded,)
    receipt = Receipt(id=record.id, bank=record.bank, replication=record.replication, recorded_at=record.recorded_at)
    # The writer answers with the receipt itself once the commit is durable.
    commit = Commit(events=(*before, RecordAdmitted(at=now, record=record), *after), answer=receipt)
    return Admission(commit, receipt)
