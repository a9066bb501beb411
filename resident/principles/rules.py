"""A principle is born a candidate, with its text and the basis it was proposed on.

Nothing promotes a candidate but the owner's decision, and a rejection says why. Members propose
for themselves; the runtime proposes on a member's behalf (from an owner's correction, say).
"""

from __future__ import annotations

from resident.checks import clean_line
from resident.messages.principles import Principle

__all__ = ["MAX_BASIS", "MAX_TEXT", "candidate", "decision_reason"]

MAX_TEXT = 2_000
MAX_BASIS = 2_000


def candidate(principle_id: str, *, member: str, text: object, basis: object, by: str, at: float) -> Principle:
    """A new candidate principle for `member` (text and basis checked; `TextInvalid` otherwise)."""
    return Principle(
        id=principle_id, member=member, text=clean_line(text, "a principle's text", MAX_TEXT),
        basis=clean_line(basis, "a principle's basis (why it is proposed)", MAX_BASIS), proposed_by=by,
        proposed_at=at,
    )


def decision_reason(reason: object, *, required: bool) -> str:
    """The reason given with a decision; a rejection must give one."""
    if reason is None or (isinstance(reason, str) and not reason.strip()):
        if required:
            return clean_line("", "a rejection's --reason", MAX_BASIS)
        return ""
    return clean_line(reason, "a decision's reason", MAX_BASIS)
