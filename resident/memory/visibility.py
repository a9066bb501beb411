"""Who may see what: the one place every read surface asks.

A member sees its own `AGENT_CORE` and `AGENT_DYADIC` banks and the `WORLD_SHARED` banks of the
worlds it belongs to; never another member's private banks, never app banks. An app sees its own
`APP_PRIVATE` banks, a workspace its own `WORKSPACE_PRIVATE` banks. On top of visibility,
fail-closed serving: a record Realm put in `conflict` or `invalidated` is never served, whoever asks.
"""

from __future__ import annotations

from resident.errors import RecordNotFound, RecordWithheld
from resident.messages.memory import Bank, MemoryRecord, Principal, ReplicationState, Scope

__all__ = [
    "WITHHELD",
    "can_see",
    "can_see_bank",
    "can_write",
    "is_served",
    "readable_record",
    "withheld_error",
]

WITHHELD: frozenset[ReplicationState] = frozenset({"conflict", "invalidated"})


def _visible(principal: Principal, scope: Scope, owner: str, world: str | None) -> bool:
    if principal.kind == "member":
        if scope in ("AGENT_CORE", "AGENT_DYADIC"):
            return owner == principal.name
        if scope == "WORLD_SHARED":
            return world is not None and world in principal.worlds
        return False
    if principal.kind == "app":
        return scope == "APP_PRIVATE" and owner == principal.name
    return scope == "WORKSPACE_PRIVATE" and owner == principal.name


def can_see_bank(principal: Principal, bank: Bank) -> bool:
    """Whether `principal` may read records of `bank` at all."""
    return _visible(principal, bank.scope, bank.owner, bank.world)


def can_see(principal: Principal, record: MemoryRecord) -> bool:
    """Whether `principal` may read `record` (visibility only; see `is_served` for withholding)."""
    return _visible(principal, record.scope, record.owner, record.world)


def can_write(principal: Principal, bank: Bank) -> bool:
    """Writers are exactly the readers: nobody writes into a bank it cannot see."""
    return can_see_bank(principal, bank)


def is_served(record: MemoryRecord) -> bool:
    """False for records Realm governance withheld (fail-closed)."""
    return record.replication not in WITHHELD


def withheld_error(record: MemoryRecord) -> RecordWithheld:
    reason = record.replication_reason or "no reason given"
    return RecordWithheld(
        f"record {record.id} is withheld ({record.replication}: {reason}); "
        f"reconcile it with `resident reconcile {record.id} --rollback` or `--readmit`",
        record_id=record.id,
        state=record.replication,
        reason=reason,
    )


def readable_record(principal: Principal, record_id: str, record: MemoryRecord | None) -> MemoryRecord:
    """`record` if `principal` may read it directly; otherwise the error that says why not.

    A record the principal may not see is reported as not found, so its existence does not leak.
    """
    if record is None or not can_see(principal, record):
        raise RecordNotFound(f"no memory record {record_id} is visible to {principal.kind} {principal.name}")
    if not is_served(record):
        raise withheld_error(record)
    return record
