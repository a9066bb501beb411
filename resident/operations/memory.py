"""Memory: on or off for the home (`rt.memory`), a member's memory (`rt.member(name)`), the roster, reconciling.

A member session may call a member's memory operations (acting as its own member, within its grant) and
`records.reconcile` (for one of its own records); the rest are the owner's.
"""

from __future__ import annotations

from resident.errors import ActorUnavailable, ResidentError
from resident.messages.memory import MemoryRecord, MemoryStatus, RecallHit, Receipt, Reconciled
from resident.messages.memory_calls import (
    MAX_REMEMBER_MANY_BODY_BYTES,
    EnableMemory,
    ForgetRequest,
    Forgotten,
    GetRequest,
    Indexed,
    MemberInfo,
    Members,
    MembersQuery,
    MemorySwitch,
    NoOptions,
    RecallHits,
    RecallRequest,
    ReconcileRecord,
    ReconcileRequest,
    RememberManyRequest,
    RememberRequest,
    VectorsReady,
    WaitIndexed,
    WaitVectors,
)
from resident.messages.outcomes import ErrorDetail, RememberedMany, error_of
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = [
    "DISABLE",
    "ENABLE",
    "FORGET",
    "GET",
    "MEMBERS",
    "OPERATIONS",
    "RECALL",
    "RECONCILE",
    "RECONCILE_RECORD",
    "REMEMBER",
    "REMEMBER_MANY",
    "STATUS",
    "WAIT_INDEXED",
    "WAIT_VECTORS",
    "MemberSurface",
    "MemorySurface",
]

_SWITCH = "resident.runtime.memory.switch"
_MEMBER = "resident.runtime.memory.member"


def _changed(reply: MemorySwitch) -> bool:
    return reply.changed


def _nothing(_reply: Forgotten) -> None:
    return None


def _indexed(reply: Indexed) -> None:
    # A Python caller hears of a wait that ran out as it always did: the substrate did not answer in time.
    if not reply.done:
        raise ActorUnavailable(reply.reason or "the substrate did not take in every change in time")


def _ready(reply: VectorsReady) -> bool:
    return reply.ready


def _hits(reply: RecallHits) -> list[RecallHit]:
    return list(reply.hits)


def _outcomes(reply: RememberedMany) -> list[Receipt | ResidentError]:
    return [
        outcome.receipt if outcome.receipt is not None
        else error_of(outcome.error or ErrorDetail(type="ApiError", message="no outcome"), 400)
        for outcome in reply.outcomes
    ]


def _roster(reply: Members) -> tuple[MemberInfo, ...]:
    return reply.members


STATUS = declare(
    "memory.status", "Memory on or off, and how it is doing", NoOptions, MemoryStatus,
    route=Route("GET", "/v1/memory"), service=f"{_SWITCH}:status",
)
ENABLE = declare(
    "memory.enable", "Turn memory on, or switch its embedder", EnableMemory, MemorySwitch,
    route=Route("POST", "/v1/memory/enable"), service=f"{_SWITCH}:enable", result=_changed,
)
DISABLE = declare(
    "memory.disable", "Turn memory off (deletes nothing)", NoOptions, MemorySwitch,
    route=Route("POST", "/v1/memory/disable"), service=f"{_SWITCH}:disable", result=_changed,
)
WAIT_INDEXED = declare(
    "memory.wait_indexed", "Wait until every committed change is indexed", WaitIndexed, Indexed,
    route=Route("POST", "/v1/memory/wait-indexed"), service=f"{_SWITCH}:wait_indexed", result=_indexed,
)
WAIT_VECTORS = declare(
    "memory.wait_vectors", "Wait until every memory has a vector of the current embedder", WaitVectors,
    VectorsReady, route=Route("POST", "/v1/memory/wait-vectors"), service=f"{_SWITCH}:wait_vectors", result=_ready,
)
MEMBERS = declare(
    "members.list", "The roster and its coordinator", MembersQuery, Members,
    route=Route("GET", "/v1/members"), service=f"{_MEMBER}:members", result=_roster,
)
REMEMBER = declare(
    "member.remember", "Store a memory durably", RememberRequest, Receipt,
    route=Route("POST", "/v1/members/{member}/remember"), service=f"{_MEMBER}:remember",
    aservice=f"{_MEMBER}:aremember", access=Access.MEMBER,
)
REMEMBER_MANY = declare(
    "member.remember_many", "Store many memories durably, each with its receipt or the error that refused it",
    RememberManyRequest, RememberedMany,
    route=Route("POST", "/v1/members/{member}/remember-many", max_body=MAX_REMEMBER_MANY_BODY_BYTES),
    service=f"{_MEMBER}:remember_many", aservice=f"{_MEMBER}:aremember_many", access=Access.MEMBER,
    result=_outcomes,
)
RECALL = declare(
    "member.recall", "Recall a member's memories", RecallRequest, RecallHits,
    route=Route("POST", "/v1/members/{member}/recall"), service=f"{_MEMBER}:recall",
    aservice=f"{_MEMBER}:arecall", access=Access.MEMBER, result=_hits,
)
GET = declare(
    "member.get", "One record, as the member sees it", GetRequest, MemoryRecord,
    route=Route("GET", "/v1/members/{member}/records/{record_id}"), service=f"{_MEMBER}:get",
    aservice=f"{_MEMBER}:aget", access=Access.MEMBER,
)
FORGET = declare(
    "member.forget", "Retract a record (it stays stored, marked retracted)", ForgetRequest, Forgotten,
    route=Route("POST", "/v1/members/{member}/records/{record_id}/forget"), service=f"{_MEMBER}:forget",
    aservice=f"{_MEMBER}:aforget", access=Access.MEMBER, result=_nothing,
)
RECONCILE = declare(
    "member.reconcile", "Settle a withheld record as this member", ReconcileRequest, Reconciled,
    route=Route("POST", "/v1/members/{member}/records/{record_id}/reconcile"), service=f"{_MEMBER}:reconcile",
    aservice=f"{_MEMBER}:areconcile", access=Access.MEMBER,
)
RECONCILE_RECORD = declare(
    "records.reconcile", "Settle a withheld record as the member who wrote it (a member session: one of its own)",
    ReconcileRecord, Reconciled, route=Route("POST", "/v1/records/{record_id}/reconcile"),
    service=f"{_MEMBER}:reconcile_record", access=Access.MEMBER,
)

OPERATIONS = (
    STATUS, ENABLE, DISABLE, WAIT_INDEXED, WAIT_VECTORS, MEMBERS, REMEMBER, REMEMBER_MANY, RECALL, GET, FORGET,
    RECONCILE, RECONCILE_RECORD,
)


class MemorySurface(Surface):
    """`rt.memory`: memory is off on a fresh home; turning it on or off is an event, and off deletes nothing."""

    status = method(STATUS)
    astatus = awaitable(STATUS)
    enable = method(ENABLE)
    aenable = awaitable(ENABLE)
    disable = method(DISABLE)
    adisable = awaitable(DISABLE)
    wait_indexed = method(WAIT_INDEXED)
    await_indexed = awaitable(WAIT_INDEXED)
    wait_vectors = method(WAIT_VECTORS)
    await_vectors = awaitable(WAIT_VECTORS)


class MemberSurface(Surface):
    """`rt.member(name)`: one member's  Every call has an awaitable twin (`aremember`, `arecall`, ...)."""

    remember = method(REMEMBER)
    aremember = awaitable(REMEMBER)
    remember_many = method(REMEMBER_MANY)
    aremember_many = awaitable(REMEMBER_MANY)
    recall = method(RECALL)
    arecall = awaitable(RECALL)
    get = method(GET)
    aget = awaitable(GET)
    forget = method(FORGET)
    aforget = awaitable(FORGET)
    reconcile = method(RECONCILE)
    areconcile = awaitable(RECONCILE)

    @property
    def name(self) -> str:
        """The member this surface acts on."""
        return self._member or ""

    def __repr__(self) -> str:
        return f"<Member {self._member}>"
