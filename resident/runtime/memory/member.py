"""A member's memory operations (`rt.member(name).remember`, ...), as the owner or a member session calls them.

The owner's calls are admitted in the caller's thread (`resident.runtime.memory.admissions`) or answered by the
member's actor; a member session's go through its `Session`, which checks each against the session's
grant. Declared in `resident.operations.memory`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import msgspec

from resident.errors import InvalidInput, RecordNotFound, ResidentError
from resident.ids import check_record_id
from resident.memory.requests import recall_message, reconcile_message, reconciled, remember_message
from resident.messages.memory import (
    Forget,
    GetRecord,
    MemoryRecord,
    Recall,
    Receipt,
    Reconciled,
    Remember,
)
from resident.messages.memory_calls import (
    ForgetRequest,
    Forgotten,
    GetRequest,
    MemberInfo,
    Members,
    MembersQuery,
    RecallHits,
    RecallRequest,
    ReconcileRecord,
    ReconcileRequest,
    RememberManyRequest,
    RememberRequest,
)
from resident.messages.outcomes import ItemOutcome, RememberedMany, detail_of
from resident.runtime.context import Call, Context
from resident.store.tables import RECORDS

T = TypeVar("T")

__all__ = [
    "aforget", "aget", "arecall", "areconcile", "aremember", "aremember_many", "forget", "get", "members",
    "recall", "reconcile", "reconcile_record", "remember", "remember_many",
]

def _fields(request: RememberRequest) -> dict[str, Any]:
    """`request`'s options as `remember_message` and `Session.remember` take them."""
    fields = msgspec.structs.asdict(request)
    for name in ("text", "source", "timeout"):
        fields.pop(name)
    return fields


def _owner_remember(request: RememberRequest) -> Remember:
    return remember_message(request.text, source=request.source or "manual", **_fields(request))


def _refuse_source(request: RememberRequest) -> None:
    if request.source is not None:
        raise InvalidInput("a member session's memories come from its execution; leave `source` out")


def remember(context: Context, call: Call, request: RememberRequest) -> Receipt:
    """Admit a memory durably; the receipt's `replication` is `pending` until Realm accepts it."""
    session = call.caller.session
    if session is not None:
        _refuse_source(request)
        return _blocking(session.remember(request.text, timeout=request.timeout, **_fields(request)))
    member = _member(call)
    return context.admissions.remember(member, _owner_remember(request), request.timeout)


async def aremember(context: Context, call: Call, request: RememberRequest) -> Receipt:
    session = call.caller.session
    if session is not None:
        _refuse_source(request)
        return await session.remember(request.text, timeout=request.timeout, **_fields(request))
    member = _member(call)
    return await context.admissions.aremember(member, _owner_remember(request), request.timeout)


def remember_many(context: Context, call: Call, request: RememberManyRequest) -> RememberedMany:
    """Admit many memories at once: valid items become durable together; one outcome per item."""
    session = call.caller.session
    if session is not None:
        outcomes = _blocking(session.remember_many(request.items, timeout=request.timeout))
    else:
        outcomes = context.admissions.remember_many(_member(call), request.items, request.timeout)
    return _many(outcomes)


async def aremember_many(context: Context, call: Call, request: RememberManyRequest) -> RememberedMany:
    session = call.caller.session
    if session is not None:
        outcomes = await session.remember_many(request.items, timeout=request.timeout)
    else:
        outcomes = await context.admissions.aremember_many(_member(call), request.items, request.timeout)
    return _many(outcomes)


def _many(outcomes: list[Receipt | ResidentError]) -> RememberedMany:
    return RememberedMany(outcomes=tuple(
        ItemOutcome(index=index, error=detail_of(outcome)) if isinstance(outcome, ResidentError)
        else ItemOutcome(index=index, receipt=outcome)
        for index, outcome in enumerate(outcomes)
    ))


def _recall(request: RecallRequest) -> Recall:
    return recall_message(
        request.query, request.k, activation=request.activation, char_budget=request.char_budget,
        include_inactive=request.include_inactive,
    )


def recall(context: Context, call: Call, request: RecallRequest) -> RecallHits:
    """The member's best-matching served memories (at most `k`, within `char_budget` characters)."""
    session = call.caller.session
    if session is not None:
        return RecallHits(hits=tuple(_blocking(session.recall(
            request.query, request.k, activation=request.activation, char_budget=request.char_budget,
            include_inactive=request.include_inactive, timeout=request.timeout,
        ))))
    return RecallHits(hits=tuple(context.ask_member(_member(call), _recall(request), request.timeout)))


async def arecall(context: Context, call: Call, request: RecallRequest) -> RecallHits:
    session = call.caller.session
    if session is not None:
        return RecallHits(hits=tuple(await session.recall(
            request.query, request.k, activation=request.activation, char_budget=request.char_budget,
            include_inactive=request.include_inactive, timeout=request.timeout,
        )))
    return RecallHits(hits=tuple(await context.ask_member_async(_member(call), _recall(request), request.timeout)))


def get(context: Context, call: Call, request: GetRequest) -> MemoryRecord:
    """One record by id; `RecordWithheld` (with state and reason) if Realm withheld it."""
    session = call.caller.session
    if session is not None:
        return _blocking(session.get(request.record_id, timeout=request.timeout))
    message = GetRecord(id=check_record_id(request.record_id))
    record: MemoryRecord = context.ask_member(_member(call), message, request.timeout)
    return record


async def aget(context: Context, call: Call, request: GetRequest) -> MemoryRecord:
    session = call.caller.session
    if session is not None:
        return await session.get(request.record_id, timeout=request.timeout)
    message = GetRecord(id=check_record_id(request.record_id))
    record: MemoryRecord = await context.ask_member_async(_member(call), message, request.timeout)
    return record


def forget(context: Context, call: Call, request: ForgetRequest) -> Forgotten:
    """Retract a record: it stays stored, marked retracted, and is no longer recalled."""
    session = call.caller.session
    if session is not None:
        _blocking(session.forget(request.record_id, request.reason, timeout=request.timeout))
    else:
        message = Forget(id=check_record_id(request.record_id), reason=request.reason)
        context.ask_member(_member(call), message, request.timeout)
    return Forgotten(id=request.record_id)


async def aforget(context: Context, call: Call, request: ForgetRequest) -> Forgotten:
    session = call.caller.session
    if session is not None:
        await session.forget(request.record_id, request.reason, timeout=request.timeout)
    else:
        message = Forget(id=check_record_id(request.record_id), reason=request.reason)
        await context.ask_member_async(_member(call), message, request.timeout)
    return Forgotten(id=request.record_id)


def _reconcile_options(request: ReconcileRequest | ReconcileRecord) -> dict[str, Any]:
    return {"rollback": request.rollback, "readmit": request.readmit, "text": request.text,
            "canonical": request.canonical}


def reconcile(context: Context, call: Call, request: ReconcileRequest) -> Reconciled:
    """Settle a withheld (conflict/invalidated) record: roll it back, or re-admit it corrected."""
    session = call.caller.session
    if session is not None:
        return _blocking(session.reconcile(request.record_id, timeout=request.timeout, **_reconcile_options(request)))
    message = reconcile_message(request.record_id, **_reconcile_options(request))
    return reconciled(message, context.ask_member(_member(call), message, request.timeout))


async def areconcile(context: Context, call: Call, request: ReconcileRequest) -> Reconciled:
    session = call.caller.session
    if session is not None:
        return await session.reconcile(request.record_id, timeout=request.timeout, **_reconcile_options(request))
    message = reconcile_message(request.record_id, **_reconcile_options(request))
    return reconciled(message, await context.ask_member_async(_member(call), message, request.timeout))


def reconcile_record(context: Context, call: Call, request: ReconcileRecord) -> Reconciled:
    """Reconcile a withheld record as the member who wrote it (a member session: one of its own)."""
    session = call.caller.session
    if session is not None:
        return _blocking(session.reconcile(request.record_id, **_reconcile_options(request)))
    context.check_open()
    with context.store.reader() as reader:
        record = reader.get(RECORDS, check_record_id(request.record_id))
    if record is None:
        raise RecordNotFound(f"no memory record {request.record_id}")
    author = record.author or record.owner
    message = reconcile_message(request.record_id, **_reconcile_options(request))
    return reconciled(message, context.ask_member(author, message, None))


def members(context: Context, _call: Call, _request: MembersQuery) -> Members:
    """The roster (configured and imported members) and the coordinator."""
    config = context.config
    roster = (*config.members, *config.extra_members)
    return Members(
        members=tuple(MemberInfo(name=m.name, role=m.role, worlds=tuple(m.worlds)) for m in roster),
        coordinator=config.coordinator,
    )


def _member(call: Call) -> str:
    assert call.member is not None  # a member operation is declared on the member's surface
    return call.member


def _blocking(awaitable: Coroutine[Any, Any, T]) -> T:
    # A session's callbacks are awaitable (its harness runs them on an event loop); a blocking caller
    # runs one on a loop of its own.
    return asyncio.run(awaitable)
