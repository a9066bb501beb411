"""Who is calling: the owner, or a member session holding a grant token.

The owner is whoever runs the runtime without a member grant. A session the runtime starts for a
member carries its grant token in `$RESIDENT_GRANT_TOKEN`; whoever presents it acts as that member,
within that session's grant, and can never do what belongs to the owner (approve or reject
principles, correct executions, import sessions or members, grant, give skills to others, ...).

Presenting a token at all gives up the owner's powers: a token that is malformed, unknown, spent
or expired is refused (`GrantInvalid`) for member calls and does not make its holder the owner
for owner calls (`OwnerOnlyAction`). This is the one place that decides it; the CLI and the
loopback API (which carries the token in the `Resident-Grant-Token` header) both ask here.

Light on purpose: the `resident` command imports it before it knows whether a runtime opens here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from resident.coordination.tokens import GRANT_FILE_ENV, GRANT_TOKEN_ENV
from resident.errors import GrantExceeded, InvalidInput, OwnerOnlyAction

if TYPE_CHECKING:
    from resident.runtime.coordination import Session

__all__ = ["Caller", "presented_token", "refuse_member_session"]

_MAX_TOKEN_FILE = 1_024
# How a presented grant reached the runtime, for the refusal's message.
_FROM_ENVIRONMENT = f"${GRANT_TOKEN_ENV} is set"


def presented_token(environ: Mapping[str, str]) -> str | None:
    """The grant token the environment presents (an empty value is presented too, and is invalid): the variable,
    else the file `$RESIDENT_GRANT_FILE` names (what a harness whose tools drop `*TOKEN*` names passes on)."""
    token = environ.get(GRANT_TOKEN_ENV)
    if token is not None or not environ.get(GRANT_FILE_ENV):
        return token
    try:
        # A token is short: what is longer, or not ASCII, is presented as it reads and refused as invalid.
        return Path(environ[GRANT_FILE_ENV]).read_bytes()[:_MAX_TOKEN_FILE].decode("ascii", "replace").strip()
    except OSError:
        return ""


def refuse_member_session(token: str | None, what: str, how: str = _FROM_ENVIRONMENT) -> None:
    """`OwnerOnlyAction` when a grant token is presented: `what` belongs to the owner.

    `how` says how the token was presented (the environment, or a request header).
    """
    if token is not None:
        raise OwnerOnlyAction(
            f"{what} belongs to the owner; this call presents a member's grant ({how}), so it acts as that "
            "member, who may not; run it as the owner, without the member's grant token"
        )


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

