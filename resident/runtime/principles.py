"""`rt.principles`: member-level rules, proposed by members or the runtime, decided by the owner only.

    p = rt.principles.propose("deven", "run the migrations before the deploy", basis="exec_… failed")
    rt.principles.approve(p.id)                   # the owner; never automatic
    rt.principles.reject(p.id, reason="too narrow")

A member at work proposes for itself through its session (`rt.with_grant(token).principles.propose(None, ...)`);
the runtime proposes the note of every owner correction to the corrected member. Declared in
`resident.operations.principles`.
"""

from __future__ import annotations

from typing import Literal

from resident.errors import InvalidInput, UnknownPrinciple
from resident.ids import new_id
from resident.messages.principles import Principle, PrincipleDecided, PrincipleProposed, PrincipleState
from resident.messages.principles_calls import (
    DecidePrinciple,
    GetPrinciple,
    ListPrinciples,
    Principles,
    ProposePrinciple,
    RejectPrinciple,
)
from resident.messages.store import Commit
from resident.principles.rules import candidate, decision_reason
from resident.runtime.context import Call, Context
from resident.store.tables import PRINCIPLES

__all__ = ["approve", "get", "list_principles", "principles_of", "propose", "propose_for", "reject"]

_STATES: tuple[PrincipleState, ...] = ("candidate", "approved", "rejected")


def propose(context: Context, call: Call, request: ProposePrinciple) -> Principle:
    """A new candidate for `member`; a member session proposes for its own member only, under its grant."""
    context.check_open()
    member, by = request.member, "owner"
    session = call.caller.session
    if session is not None:
        session.authorize("propose_principle")
        if member not in (None, session.member.name):
            raise InvalidInput(f"a session of {session.member.name} proposes principles for itself only")
        member = by = session.member.name
    if member is None:
        raise InvalidInput("say which member the principle is for")
    return propose_for(context, member, request.text, basis=request.basis, by=by)


def propose_for(context: Context, member: str, text: str, *, basis: str, by: str) -> Principle:
    """Record a candidate for `member` proposed by `by` (the owner, the member, or the runtime itself)."""
    context.config.member(member)
    principle = candidate(new_id("prn"), member=member, text=text, basis=basis, by=by, at=context.clock.time())
    context.write(Commit(events=(PrincipleProposed(at=principle.proposed_at, principle=principle),)))
    return principle


def list_principles(context: Context, call: Call, request: ListPrinciples) -> Principles:
    """Principles, oldest first (optionally of one member, in one state); a session sees its own member's."""
    member = request.member if call.caller.is_owner else call.caller.acting_as(request.member)
    return Principles(principles=tuple(principles_of(context, member=member, state=request.state)))


def principles_of(context: Context, *, member: str | None = None, state: str | None = None) -> list[Principle]:
    """Principles, oldest first, of one member and in one state when named."""
    context.check_open()
    if member is not None:
        context.config.member(member)
    if state is not None and state not in _STATES:
        raise InvalidInput(f"a principle's state is one of {', '.join(_STATES)}, not {state!r}")
    with context.store.reader() as reader:
        found = [p for _, p in reader.items(PRINCIPLES)]
    return sorted(
        (p for p in found if (member is None or p.member == member) and (state is None or p.state == state)),
        key=lambda p: (p.proposed_at, p.id),
    )


def get(context: Context, _call: Call, request: GetPrinciple) -> Principle:
    """One principle by id (`UnknownPrinciple` when there is none)."""
    return _principle(context, request.principle_id)


def _principle(context: Context, principle_id: str) -> Principle:
    context.check_open()
    with context.store.reader() as reader:
        principle = reader.get(PRINCIPLES, principle_id) if isinstance(principle_id, str) else None
    if principle is None:
        raise UnknownPrinciple(f"no principle {str(principle_id)[:80]!r}; see `resident principles list`")
    return principle


def approve(context: Context, _call: Call, request: DecidePrinciple) -> Principle:
    """The owner approves a candidate: it becomes one of the member's principles."""
    return _decide(context, request.principle_id, "approved", decision_reason(request.reason, required=False))


def reject(context: Context, _call: Call, request: RejectPrinciple) -> Principle:
    """The owner rejects a candidate, saying why."""
    return _decide(context, request.principle_id, "rejected", decision_reason(request.reason, required=True))


def _decide(context: Context, principle_id: str, decision: Literal["approved", "rejected"], reason: str) -> Principle:
    _principle(context, principle_id)
    event = PrincipleDecided(at=context.clock.time(), id=principle_id, decision=decision, by="owner", reason=reason)
    context.write(Commit(events=(event,)))
    return _principle(context, principle_id)
