"""Grants: what a member may do while it works on a dispatched task.

A grant names actions, memory scopes and an expiry. A child grant is derived from a parent and
can never exceed it: every action and scope must be in the parent's, and it cannot outlive it.
Merging, approving and pushing to protected branches belong to the owner alone: no grant, root or
derived, can ever carry them. Member callbacks into the runtime are checked against the grant.
"""

from __future__ import annotations

from collections.abc import Iterable

from resident.errors import GrantExceeded, OwnerOnlyAction
from resident.messages.coordination import Grant
from resident.messages.memory import SCOPES, Scope

__all__ = [
    "EVOLUTION_ACTIONS",
    "GRANTABLE_ACTIONS",
    "OWNER_ONLY_ACTIONS",
    "ROLE_ACTIONS",
    "check",
    "derive",
    "issue_root",
    "role_actions",
]

OWNER_ONLY_ACTIONS = frozenset({"merge", "approve", "push_protected"})
GRANTABLE_ACTIONS = frozenset(
    {
        "remember",
        "recall",
        "forget",
        "supersede",
        "reconcile",
        "read_engagement",
        "write_engagement",
        "fetch_skills",
        "write_skills",
        "propose_principle",
        "write_back",
        "push",
        "review",
        "deploy",
        # Dispatch work to members under children of this grant, and accept or reject what comes back.
        "dispatch",
    }
)
# Every member at work may fetch and write skills, propose principles for itself, and read and
# switch its own engagement (evolution's callbacks); roles differ in what else they may do.
EVOLUTION_ACTIONS = frozenset(
    {"fetch_skills", "write_skills", "propose_principle", "read_engagement", "write_engagement"}
)
ROLE_ACTIONS: dict[str, frozenset[str]] = {
    role: actions | EVOLUTION_ACTIONS
    for role, actions in {
        "implement": frozenset({"remember", "recall", "forget", "supersede", "reconcile", "write_back", "push"}),
        "review": frozenset({"recall", "remember", "review"}),
        # An audit is a second, independent examination of a change (the acceptance gate asks for both).
        "audit": frozenset({"recall", "remember", "review"}),
        "test": frozenset({"remember", "recall", "forget", "supersede", "reconcile"}),
        "operate": frozenset({"remember", "recall", "forget", "supersede", "reconcile", "deploy"}),
        "research": frozenset({"remember", "recall", "forget", "supersede", "reconcile"}),
        # A coordinator (Samuel) dispatches within its own grant: it holds what it may hand on (memory work and
        # review), never pushes or deploys, so neither can anything it dispatches.
        "coordinate": frozenset(
            {"remember", "recall", "forget", "supersede", "reconcile", "review", "read_engagement", "dispatch"}
        ),
    }.items()
}


def role_actions(role: str, parent: Grant) -> frozenset[str]:
    """What a step in `role` is granted when its dispatcher names no actions.

    The role's own actions, and evolution's callbacks (skills, principles, engagement) as far as
    `parent` allows them: a parent granted for memory work alone still dispatches by role, and its
    members simply cannot call those back.
    """
    return (ROLE_ACTIONS[role] - EVOLUTION_ACTIONS) | (EVOLUTION_ACTIONS & frozenset(parent.actions))


def _known(actions: Iterable[str]) -> tuple[str, ...]:
    wanted = tuple(sorted(set(actions)))
    owner_only = sorted(set(wanted) & OWNER_ONLY_ACTIONS)
    if owner_only:
        raise OwnerOnlyAction(
            f"{', '.join(owner_only)} belong to the owner and can never be granted; the owner does them directly"
        )
    unknown = sorted(set(wanted) - GRANTABLE_ACTIONS)
    if unknown:
        raise GrantExceeded(f"unknown action {unknown[0]!r}; grantable actions: {', '.join(sorted(GRANTABLE_ACTIONS))}")
    return wanted


def _scopes(scopes: Iterable[str]) -> tuple[Scope, ...]:
    wanted = set(scopes)
    unknown = sorted(wanted - set(SCOPES))
    if unknown:
        raise GrantExceeded(f"unknown scope {unknown[0]!r} in a grant; use {', '.join(SCOPES)}")
    return tuple(s for s in SCOPES if s in wanted)


def issue_root(
    grant_id: str, *, holder: str, actions: Iterable[str], scopes: Iterable[str], expires_at: float, now: float,
    issued_by: str = "owner",
) -> Grant:
    """A grant issued by the owner directly (never carrying owner-only actions)."""
    if expires_at <= now:
        raise GrantExceeded("a grant must expire in the future")
    return Grant(
        id=grant_id, holder=holder, actions=_known(actions), scopes=_scopes(scopes), expires_at=expires_at,
        issued_at=now, issued_by=issued_by,
    )


def derive(
    parent: Grant, grant_id: str, *, holder: str, actions: Iterable[str], scopes: Iterable[str], expires_at: float,
    now: float,
) -> Grant:
    """A child of `parent` for `holder`; any widening (action, scope, expiry) is refused."""
    if parent.expires_at <= now:
        raise GrantExceeded(f"grant {parent.id} expired; ask the owner for a new one")
    wanted_actions = _known(actions)
    wanted_scopes = _scopes(scopes)
    extra_actions = sorted(set(wanted_actions) - set(parent.actions))
    if extra_actions:
        listed = ", ".join(extra_actions)
        raise GrantExceeded(f"grant {parent.id} does not allow {listed}; a child grant cannot widen it")
    extra_scopes = sorted(set(wanted_scopes) - set(parent.scopes))
    if extra_scopes:
        listed = ", ".join(extra_scopes)
        raise GrantExceeded(f"grant {parent.id} does not cover {listed}; a child grant cannot widen it")
    if expires_at > parent.expires_at:
        raise GrantExceeded(f"a child grant cannot outlive grant {parent.id}")
    if expires_at <= now:
        raise GrantExceeded("a grant must expire in the future")
    return Grant(
        id=grant_id, holder=holder, actions=wanted_actions, scopes=wanted_scopes, expires_at=expires_at,
        issued_at=now, issued_by=parent.holder, parent=parent.id,
    )


def check(grant: Grant, action: str, scope: str | None, now: float) -> None:
    """Refuse a callback the grant does not cover (action, scope, or an expired grant)."""
    if action in OWNER_ONLY_ACTIONS:
        raise OwnerOnlyAction(f"{action} belongs to the owner and is never granted")
    if now >= grant.expires_at:
        raise GrantExceeded(f"grant {grant.id} of {grant.holder} expired; the task must be dispatched again")
    if action not in grant.actions:
        raise GrantExceeded(f"grant {grant.id} does not allow {grant.holder} to {action}")
    if scope is not None and scope not in grant.scopes:
        raise GrantExceeded(f"grant {grant.id} does not cover {scope} memories")
