"""Versioned evolution changes, as projections write them: one numbered row per change, per member.

A change id is `member@version` (a member name never holds `@`), stored under
`member/version` with the version zero-padded, so a member's changes list in version order.
Projections of evolution events call `record_change` in the same transaction as the change itself;
a compensating event names the change it undoes, which is marked, never removed.
"""

from __future__ import annotations

import msgspec

from resident.errors import RollbackRefused, UnknownChange
from resident.messages.evolution import ChangeKind, EvolutionChange, MemberEvolution
from resident.store.tables import EVOLUTION, MEMBER_EVOLUTION
from resident.store.view import View

__all__ = ["change_id", "change_key", "compensable", "member_evolution", "record_change", "started"]


def change_id(member: str, version: int) -> str:
    return f"{member}@{version}"


def change_key(identifier: str) -> str:
    """The table key of change `identifier` (`UnknownChange` when it is not shaped like one)."""
    member, _, version = identifier.partition("@")
    if not member or not version.isdigit() or len(version) > 10:
        raise UnknownChange(f"{identifier[:80]!r} is not an evolution change id (they look like deven@12)")
    return f"{member}/{int(version):010d}"


def member_evolution(view: View, member: str) -> MemberEvolution:
    return view.get(MEMBER_EVOLUTION, member) or MemberEvolution(member=member)


def started(view: View, member: str, at: float) -> MemberEvolution:
    """The member's evolution row, with its start time set by its first evolution event."""
    row = member_evolution(view, member)
    if row.since is None:
        row = msgspec.structs.replace(row, since=at)
        view.put(MEMBER_EVOLUTION, member, row)
    return row


def record_change(
    view: View,
    *,
    member: str,
    kind: ChangeKind,
    subject: str,
    before: str,
    after: str,
    basis: str,
    at: float,
    ref: str = "",
    compensates: str = "",
) -> str:
    """Append the member's next change (and mark the one it compensates); its id."""
    row = member_evolution(view, member)
    version = row.version + 1
    identifier = change_id(member, version)
    view.put(MEMBER_EVOLUTION, member, msgspec.structs.replace(row, version=version))
    change = EvolutionChange(
        id=identifier, member=member, version=version, kind=kind, subject=subject, before=before, after=after,
        basis=basis, at=at, ref=ref, compensates=compensates,
    )
    view.put(EVOLUTION, change_key(identifier), change)
    if compensates:
        undone = compensable(view, compensates)
        view.put(EVOLUTION, change_key(compensates), msgspec.structs.replace(undone, rolled_back_by=identifier))
    return identifier


def compensable(view: View, identifier: str, *kinds: ChangeKind) -> EvolutionChange:
    """Change `identifier`, if it exists, is of one of `kinds` (any when none) and is not undone yet."""
    change = view.get(EVOLUTION, change_key(identifier))
    if change is None:
        raise UnknownChange(f"no evolution change {identifier}; see `resident evolution log MEMBER`")
    if change.rolled_back_by:
        raise RollbackRefused(f"change {identifier} was already rolled back by {change.rolled_back_by}")
    if kinds and change.kind not in kinds:
        raise RollbackRefused(f"change {identifier} is a {change.kind} change, not {' or '.join(kinds)}")
    return change
