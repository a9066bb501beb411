"""Who is calling: the owner, or a member session holding a grant token.

The owner is whoever runs the runtime without a member grant. A session the runtime starts for a
member carries its grant token in `$RESIDENT_GRANT_TOKEN`; whoever presents it acts as that member,
within that session's grant, and can never do what belongs to the owner (approve or reject
principles, correct executions, import sessions or members, grant, give skills to others, ...).

Presenting a token at all gives up the owner's powers: a token that is malformed, unknown, spent
or expired is refused (`GrantInvalid`) for member calls and does not make its holder the owner
for owner calls (`OwnerOnlyAction`). This is the one place that decides it; the CLI (and later the
loopback API) asks here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from resident.coordination.tokens import GRANT_TOKEN_ENV
from resident.errors import GrantExceeded, InvalidInput, OwnerOnlyAction, ResidentError
from resident.messages.memory import MemoryRecord, RecallHit, Receipt, Reconciled

if TYPE_CHECKING:
    from resident.runtime.coordination import Session
    from resident.runtime.member import Member
    from resident.runtime.runtime import Runtime

__all__ = ["Caller", "SessionMemory", "presented_token", "refuse_member_session", "resolve_caller"]


def presented_token(environ: Mapping[str, str]) -> str | None:
    """The grant token the environment presents (an empty value is presented too, and is invalid)."""
    return environ.get(GRANT_TOKEN_ENV)


def refuse_member_session(token: str | None, what: str) -> None:
    """`OwnerOnlyAction` when a grant token is presented: `what` belongs to the owner."""
    if token is not None:
        raise OwnerOnlyAction(
            f"{what} belongs to the owner; this call presents a member's grant (${GRANT_TOKEN_ENV} is set), "
            "so it acts as that member and cannot"
        )


class SessionMemory:
    """A member session's memory calls, each checked against its grant (blocking versions)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def remember(self, text: str | bytes, **options: Any) -> Receipt:
        return asyncio.run(self._session.remember(text, **options))

    def remember_many(self, items: Iterable[Mapping[str, Any]], **options: Any) -> list[Receipt | ResidentError]:
        return asyncio.run(self._session.remember_many(items, **options))

    def recall(self, query: str | bytes, k: int = 10, **options: Any) -> list[RecallHit]:
        return asyncio.run(self._session.recall(query, k, **options))

    def get(self, record_id: str) -> MemoryRecord:
        return asyncio.run(self._session.get(record_id))

    def forget(self, record_id: str, *, reason: str = "") -> None:
        asyncio.run(self._session.forget(record_id, reason))

    def reconcile(self, record_id: str, **options: Any) -> Reconciled:
        return asyncio.run(self._session.reconcile(record_id, **options))


@dataclass(frozen=True)
class Caller:
    """The owner (no session), or the member whose session presented its token."""

    session: Session | None = None

    @property
    def is_owner(self) -> bool:
        return self.session is None

    @property
    def member(self) -> str | None:
        return None if self.session is None else self.session.member.name

    def acting_as(self, named: str | None, what: str = "a member") -> str:
        """The member a call acts as: the session's own (naming another is refused), or the one the owner names."""
        if self.session is None:
            if named is None:
                raise InvalidInput(f"say which member: {what} is for one member (--member NAME)")
            return named
        mine = self.session.member.name
        if named not in (None, mine):
            raise GrantExceeded(f"the session of {mine} acts as {mine} only, not as {named}")
        return mine

    def authorize(self, action: str) -> None:
        """Check `action` against the session's grant (the owner needs no grant)."""
        if self.session is not None:
            self.session.authorize(action)

    def memory(self, runtime: Runtime, member: str | None) -> Member | SessionMemory:
        """`member`'s memory as this caller may use it."""
        name = self.acting_as(member)
        if self.session is None:
            return runtime.member(name)
        return SessionMemory(self.session)


def resolve_caller(runtime: Runtime, token: str | None) -> Caller:
    """The caller a presented token (or none) stands for; `GrantInvalid` for a token that stands for no session."""
    return Caller() if token is None else Caller(runtime.coordinator.session(token))
