"""`rt.principles`: member-level rules, proposed by members or the runtime, decided by the owner only.

    p = rt.principles.propose("deven", "run the migrations before the deploy", basis="exec_… failed")
    rt.principles.approve(p.id)                   # the owner; never automatic
    rt.principles.reject(p.id, reason="too narrow")

A member at work proposes for itself through its session (`propose(..., session=session)`); the
runtime proposes the note of every owner correction to the corrected member.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from resident.errors import InvalidInput, UnknownPrinciple
from resident.ids import new_id
from resident.messages.principles import Principle, PrincipleDecided, PrincipleProposed, PrincipleState
from resident.messages.store import Commit
from resident.principles.rules import candidate, decision_reason
from resident.store.tables import PRINCIPLES

if TYPE_CHECKING:
    from resident.runtime.coordination import Session
    from resident.runtime.runtime import Runtime

__all__ = ["PrinciplesControl"]

_STATES: tuple[PrincipleState, ...] = ("candidate", "approved", "rejected")


class PrinciplesControl:
    """Propose, list and decide principles."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def propose(
        self, member: str | None, text: str, *, basis: str, by: str = "runtime", session: Session | None = None
    ) -> Principle:
        """A new candidate for `member` (a session proposes for its own member only)."""
        runtime = self._runtime
        runtime.check_open()
        if session is not None:
            session.authorize("propose_principle")
            if member not in (None, session.member.name):
                raise InvalidInput(f"a session of {session.member.name} proposes principles for itself only")
            member, by = session.member.name, session.member.name
        if member is None:
            raise InvalidInput("say which member the principle is for")
        runtime.config.member(member)
        principle = candidate(new_id("prn"), member=member, text=text, basis=basis, by=by, at=runtime.clock.time())
        runtime._internal.write(Commit(events=(PrincipleProposed(at=principle.proposed_at, principle=principle),)))
        return principle

    def list(self, *, member: str | None = None, state: str | None = None) -> list[Principle]:
        """Principles, oldest first (optionally of one member, in one state)."""
        runtime = self._runtime
        runtime.check_open()
        if member is not None:
            runtime.config.member(member)
        if state is not None and state not in _STATES:
            raise InvalidInput(f"a principle's state is one of {', '.join(_STATES)}, not {state!r}")
        with runtime._internal.store.reader() as reader:
            found = [p for _, p in reader.items(PRINCIPLES)]
        return sorted(
            (p for p in found if (member is None or p.member == member) and (state is None or p.state == state)),
            key=lambda p: (p.proposed_at, p.id),
        )

    def get(self, principle_id: str) -> Principle:
        self._runtime.check_open()
        with self._runtime._internal.store.reader() as reader:
            principle = reader.get(PRINCIPLES, principle_id) if isinstance(principle_id, str) else None
        if principle is None:
            raise UnknownPrinciple(f"no principle {str(principle_id)[:80]!r}; see `resident principles list`")
        return principle

    def approve(self, principle_id: str, *, reason: str = "", by: str = "owner") -> Principle:
        """The owner approves a candidate: it becomes one of the member's principles."""
        return self._decide(principle_id, "approved", decision_reason(reason, required=False), by)

    def reject(self, principle_id: str, *, reason: str, by: str = "owner") -> Principle:
        """The owner rejects a candidate, saying why."""
        return self._decide(principle_id, "rejected", decision_reason(reason, required=True), by)

    def _decide(
        self, principle_id: str, decision: Literal["approved", "rejected"], reason: str, by: str
    ) -> Principle:
        self.get(principle_id)
        at = self._runtime.clock.time()
        event = PrincipleDecided(at=at, id=principle_id, decision=decision, by=by, reason=reason)
        self._runtime._internal.write(Commit(events=(event,)))
        return self.get(principle_id)
