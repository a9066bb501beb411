"""Who may see what: the one place every read surface asks.

A member sees its own `AGENT_CORE` and `AGENT_DYADIC` banks and the `WORLD_SHARED` banks of the
worlds it belongs to; never another member's private banks, never app banks. An app sees its own
`APP_PRIVATE` banks, a workspace its own `WORKSPACE_PRIVATE` banks. A member acting under a grant
sees only the scopes the grant covers. On top of visibility, fail-closed serving: a record Realm
put in `conflict` or `invalidated`, or a new version still awaiting Realm's review after one, is
never served, whoever asks; nor is a record whose content no longer matches its digest.
"""

from __future__ import annotations

import logging

from resident.errors import GrantExceeded, RecordNotFound, RecordWithheld
from resident.memory.integrity import corruption_error, is_intact
from resident.messages.memory import Bank, MemoryRecord, Principal, ReplicationState, Scope

__all__ = [
    "WITHHELD",
    "can_see",
    "can_see_bank",
    "can_write",
    "check_within_grant",
    "intact_record",
    "is_served",
    "readable_record",
    "visible_record",
    "withheld_error",
]

logger = logging.getLogger(__name__)

WITHHELD: frozenset[ReplicationState] = frozenset({"pending_review", "conflict", "invalidated"})


def _visible_to_whole_principal(principal: Principal, scope: Scope, owner: str, world: str | None) -> bool:
    if principal.kind == "member":
        if scope in ("AGENT_CORE", "AGENT_DYADIC"):
            return owner == principal.name
        if scope == "WORLD_SHARED":
            return world is not None and world in principal.worlds
        return False
    if principal.kind == "app":
        return scope == "APP_PRIVATE" and owner == principal.name
    return scope == "WORKSPACE_PRIVATE" and owner == principal.name


def _within_grant(principal: Principal, scope: Scope) -> bool:
    return principal.scopes is None or scope in principal.scopes


def check_within_grant(principal: Principal, scope: Scope, what: str) -> None:
    """Refuse (`GrantExceeded`) when `principal` acts under a grant that does not cover `scope`."""
    if not _within_grant(principal, scope):
        raise GrantExceeded(f"grant {principal.grant} does not cover {scope} memories such as {what}")


def _visible(principal: Principal, scope: Scope, owner: str, world: str | None) -> bool:
    return _within_grant(principal, scope) and _visible_to_whole_principal(principal, scope, owner, world)


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
    """False for records Realm governance withheld, or whose new version awaits its review (fail-closed)."""
    return record.replication not in WITHHELD


def withheld_error(record: MemoryRecord) -> RecordWithheld:
    if record.replication == "pending_review":
        return RecordWithheld(
            f"record {record.id} supersedes a withheld record and is withheld until Realm accepts it "
            "(pending_review); `resident replication sync` asks Realm now",
            record_id=record.id,
            state=record.replication,
            reason="awaiting Realm's review",
        )
    reason = record.replication_reason or "no reason given"
    return RecordWithheld(
        f"record {record.id} is withheld ({record.replication}: {reason}); "
        f"reconcile it with `resident reconcile {record.id} --rollback` or `--readmit`",
        record_id=record.id,
        state=record.replication,
        reason=reason,
    )


def visible_record(principal: Principal, record_id: str, record: MemoryRecord | None) -> MemoryRecord:
    """`record` if `principal` may see it at all (served or not); otherwise the error that says why not.

    A record the principal may not see is reported as not found, so its existence does not leak.
    One it could see but its grant does not cover is `GrantExceeded`.
    """
    if record is not None and can_see(principal, record):
        return record
    if record is not None and _visible_to_whole_principal(principal, record.scope, record.owner, record.world):
        check_within_grant(principal, record.scope, record_id)
    raise RecordNotFound(f"no memory record {record_id} is visible to {principal.kind} {principal.name}")


def intact_record(record: MemoryRecord) -> MemoryRecord:
    """`record` if its content still matches its digest; else `RecordCorrupted`, logged."""
    if not is_intact(record):
        error = corruption_error(record)
        logger.error("%s", error.message)
        raise error
    return record


def readable_record(principal: Principal, record_id: str, record: MemoryRecord | None) -> MemoryRecord:
    """`record` if `principal` may read it directly; otherwise the error that says why not.

    Beyond `visible_record`: a withheld record says why it is withheld, and one whose content no
    longer matches its digest is `RecordCorrupted` (and logged).
    """
    visible = visible_record(principal, record_id, record)
    if not is_served(visible):
        raise withheld_error(visible)
    return intact_record(visible)
