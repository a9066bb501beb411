"""How skill events change state: the library, member skill sets, sessions, uses, forgetting.

The member actor computes each change with the rules in `resident.skills` (new weights, what to
forget) and writes the result; these projections apply it as given and check only what the
transaction can see: the skill exists, the holding is (or is not) in the set, the session is open,
the use still has the score being replaced. Every change to a set or a weight also appends its
versioned evolution change (`resident.store.changes`).
"""

from __future__ import annotations

import msgspec

from resident.errors import InvalidInput, SkillInvalid, UnknownSkill
from resident.messages.skills import (
    ForgettingDryRun,
    NativeSkillsDeclared,
    SkillAdded,
    SkillForgotten,
    SkillGiven,
    SkillHolding,
    SkillRead,
    SkillReclaimed,
    SkillRemoved,
    SkillRestored,
    SkillSession,
    SkillSessionClosed,
    SkillSessionOpened,
    SkillUse,
    SkillUseCorrected,
    SkillUsed,
)
from resident.store.changes import compensable, member_evolution, record_change, started
from resident.store.projecting import projection
from resident.store.tables import EXECUTIONS, MEMBER_EVOLUTION, SKILL_HOLDINGS, SKILL_SESSIONS, SKILLS
from resident.store.view import View

__all__ = ["holding_key", "session_key"]


def holding_key(member: str, skill: str) -> str:
    return f"{member}/{skill}"


def session_key(member: str, execution: str) -> str:
    return f"{member}/{execution}"


def _library_has(view: View, skill: str) -> None:
    if view.get(SKILLS, skill) is None:
        raise UnknownSkill(f"no skill {skill!r} in the team library; see `resident skills list`")


def _holding(view: View, member: str, skill: str) -> SkillHolding:
    holding = view.get(SKILL_HOLDINGS, holding_key(member, skill))
    if holding is None:
        raise UnknownSkill(f"{member} has never held skill {skill!r}")
    return holding


def _session(view: View, member: str, execution: str) -> SkillSession:
    session = view.get(SKILL_SESSIONS, session_key(member, execution))
    if session is None:
        raise InvalidInput(f"execution {execution} is not a session of {member}")
    return session


def _weight(value: float) -> str:
    return f"{value:.4f}"


# -- the library ---------------------------------------------------------------------------------


def _addable(view: View, event: SkillAdded) -> bool:
    skill = event.skill
    if view.get(SKILLS, skill.name) is not None:
        raise SkillInvalid(
            f"skill {skill.name!r} is already in the team library; a rewrite is a new skill: "
            "give it a new name and say --derived-from " + skill.name
        )
    if skill.derived_from is not None:
        _library_has(view, skill.derived_from)
    return True


@projection(SkillAdded, check=_addable)
def _added(view: View, event: SkillAdded) -> None:
    view.put(SKILLS, event.skill.name, event.skill)


# -- joining and leaving a set -------------------------------------------------------------------


def _joinable(view: View, event: SkillGiven | SkillReclaimed) -> bool:
    _library_has(view, event.skill)
    held = view.get(SKILL_HOLDINGS, holding_key(event.member, event.skill))
    if held is not None and held.in_set:
        raise InvalidInput(f"{event.member} already carries skill {event.skill!r}")
    if not 0.0 <= event.weight <= 1_000.0:
        raise InvalidInput(f"an initial weight must be from 0 to 1000, not {event.weight!r}")
    return True


def _join(view: View, event: SkillGiven | SkillReclaimed, origin: str) -> None:
    started(view, event.member, event.at)
    previous = view.get(SKILL_HOLDINGS, holding_key(event.member, event.skill))
    holding = SkillHolding(
        member=event.member, skill=event.skill, weight=event.weight, updated_session=event.session,
        updated_at=event.at, added_session=event.session, added_at=event.at, track=event.track,
        origin="given" if origin == "give" else "reclaimed",
    )
    view.put(SKILL_HOLDINGS, holding_key(event.member, event.skill), holding)
    record_change(
        view, member=event.member, kind="give" if origin == "give" else "reclaim", subject=event.skill,
        before="forgotten" if previous is not None else "not held",
        after=f"in set, weight {_weight(event.weight)} ({event.track} track)",
        basis=event.basis or f"{'given' if origin == 'give' else 'reclaimed'} by {event.by}", at=event.at,
    )


@projection(SkillGiven, check=_joinable)
def _given(view: View, event: SkillGiven) -> None:
    _join(view, event, "give")


@projection(SkillReclaimed, check=_joinable)
def _reclaimed(view: View, event: SkillReclaimed) -> None:
    _join(view, event, "reclaim")


def _natives_change(view: View, event: NativeSkillsDeclared) -> bool:
    for skill in event.skills:
        _library_has(view, skill)
    row = member_evolution(view, event.member)
    return row.natives != event.skills or row.natives_digest != event.digest


@projection(NativeSkillsDeclared, check=_natives_change)
def _natives(view: View, event: NativeSkillsDeclared) -> None:
    row = started(view, event.member, event.at)
    for skill in set(row.natives) - set(event.skills):
        holding = view.get(SKILL_HOLDINGS, holding_key(event.member, skill))
        if holding is not None:
            view.put(SKILL_HOLDINGS, holding_key(event.member, skill), msgspec.structs.replace(holding, native=False))
    for skill in event.skills:
        holding = view.get(SKILL_HOLDINGS, holding_key(event.member, skill))
        if holding is None:
            holding = SkillHolding(
                member=event.member, skill=skill, weight=event.weight, updated_session=event.session,
                updated_at=event.at, added_session=event.session, added_at=event.at, origin="native",
            )
        native = msgspec.structs.replace(
            holding, in_set=True, native=True, would_forget=False, left_at=None, left_rule=""
        )
        view.put(SKILL_HOLDINGS, holding_key(event.member, skill), native)
    view.put(MEMBER_EVOLUTION, event.member, msgspec.structs.replace(
        member_evolution(view, event.member), natives=event.skills, natives_digest=event.digest
    ))
    record_change(
        view, member=event.member, kind="natives", subject="soul.md", before=", ".join(row.natives) or "none",
        after=", ".join(event.skills) or "none", basis=f"soul.md {event.digest[:12]}", at=event.at,
    )


def _forgettable(view: View, event: SkillForgotten) -> bool:
    holding = _holding(view, event.member, event.skill)
    if not holding.in_set:
        raise InvalidInput(f"{event.member} does not carry skill {event.skill!r}")
    if holding.native:
        raise InvalidInput(f"skill {event.skill!r} is native to {event.member} and is never forgotten")
    return True


@projection(SkillForgotten, check=_forgettable)
def _forgotten(view: View, event: SkillForgotten) -> None:
    holding = _holding(view, event.member, event.skill)
    left = msgspec.structs.replace(holding, in_set=False, would_forget=False, left_at=event.at, left_rule=event.rule)
    view.put(SKILL_HOLDINGS, holding_key(event.member, event.skill), left)
    rule = "unused too long with a low weight" if event.rule == "unused" else "the set was over its size"
    record_change(
        view, member=event.member, kind="forget", subject=event.skill, before=f"in set, weight {_weight(event.weight)}",
        after="forgotten (still in the team library)", basis=f"{event.rule}: {rule}", at=event.at,
    )


@projection(ForgettingDryRun, check=lambda _view, event: bool(event.flagged or event.cleared))
def _dry_run(view: View, event: ForgettingDryRun) -> None:
    for skill in event.cleared:
        holding = view.get(SKILL_HOLDINGS, holding_key(event.member, skill))
        if holding is not None:
            cleared = msgspec.structs.replace(holding, would_forget=False)
            view.put(SKILL_HOLDINGS, holding_key(event.member, skill), cleared)
    for candidate in event.flagged:
        holding = _holding(view, event.member, candidate.skill)
        view.put(SKILL_HOLDINGS, holding_key(event.member, candidate.skill),
                 msgspec.structs.replace(holding, would_forget=True))
        record_change(
            view, member=event.member, kind="forget-dry-run", subject=candidate.skill,
            before=f"in set, weight {_weight(candidate.weight)}", after="would be forgotten (first month: dry run)",
            basis=f"{candidate.rule} rule", at=event.at,
        )


def _removable(view: View, event: SkillRemoved) -> bool:
    compensable(view, event.compensates, "give", "reclaim")
    if not _holding(view, event.member, event.skill).in_set:
        raise InvalidInput(f"{event.member} no longer carries skill {event.skill!r}; nothing to roll back")
    return True


@projection(SkillRemoved, check=_removable)
def _removed(view: View, event: SkillRemoved) -> None:
    holding = _holding(view, event.member, event.skill)
    left = msgspec.structs.replace(holding, in_set=False, would_forget=False, left_at=event.at, left_rule="rollback")
    view.put(SKILL_HOLDINGS, holding_key(event.member, event.skill), left)
    record_change(
        view, member=event.member, kind="remove", subject=event.skill, before="in set", after="not in set",
        basis=event.basis, at=event.at, compensates=event.compensates,
    )


def _restorable(view: View, event: SkillRestored) -> bool:
    compensable(view, event.compensates, "forget")
    if _holding(view, event.member, event.skill).in_set:
        raise InvalidInput(f"{event.member} carries skill {event.skill!r} again already; nothing to roll back")
    return True


@projection(SkillRestored, check=_restorable)
def _restored(view: View, event: SkillRestored) -> None:
    holding = _holding(view, event.member, event.skill)
    back = msgspec.structs.replace(
        holding, in_set=True, added_session=event.session, added_at=event.at, left_at=None, left_rule=""
    )
    view.put(SKILL_HOLDINGS, holding_key(event.member, event.skill), back)
    record_change(
        view, member=event.member, kind="restore", subject=event.skill, before="forgotten",
        after=f"in set, weight {_weight(holding.weight)}", basis=event.basis, at=event.at,
        compensates=event.compensates,
    )


# -- sessions and uses ---------------------------------------------------------------------------


@projection(
    SkillSessionOpened,
    check=lambda view, event: view.get(SKILL_SESSIONS, session_key(event.member, event.execution)) is None,
)
def _opened(view: View, event: SkillSessionOpened) -> None:
    row = started(view, event.member, event.at)
    row = msgspec.structs.replace(row, sessions=row.sessions + 1)
    view.put(MEMBER_EVOLUTION, event.member, row)
    session = SkillSession(member=event.member, execution=event.execution, ordinal=row.sessions, opened_at=event.at)
    view.put(SKILL_SESSIONS, session_key(event.member, event.execution), session)


def _readable(view: View, event: SkillRead) -> bool:
    _library_has(view, event.skill)
    session = _session(view, event.member, event.execution)
    execution = view.get(EXECUTIONS, event.execution)
    if session.closed or execution is None or execution.outcome != "running":
        raise InvalidInput(f"the session of execution {event.execution} has ended; a read must happen inside it")
    return event.skill not in session.reads


@projection(SkillRead, check=_readable)
def _read(view: View, event: SkillRead) -> None:
    session = _session(view, event.member, event.execution)
    read = msgspec.structs.replace(session, reads=(*session.reads, event.skill))
    view.put(SKILL_SESSIONS, session_key(event.member, event.execution), read)


def _usable(view: View, event: SkillUsed) -> bool:
    session = _session(view, event.member, event.execution)
    if session.closed or event.skill not in session.reads:
        raise InvalidInput(f"skill {event.skill!r} was not read in the open session {event.execution}")
    if not _holding(view, event.member, event.skill).in_set:
        raise InvalidInput(f"{event.member} does not carry skill {event.skill!r}; a use needs it in the set")
    return True


@projection(SkillUsed, check=_usable)
def _used(view: View, event: SkillUsed) -> None:
    holding = _holding(view, event.member, event.skill)
    view.put(SKILL_HOLDINGS, holding_key(event.member, event.skill), msgspec.structs.replace(
        holding, weight=event.weight, updated_session=event.session, updated_at=event.at,
        last_used_session=event.session, last_used_at=event.at,
    ))
    session = _session(view, event.member, event.execution)
    use = SkillUse(skill=event.skill, score=event.score, session=event.session, at=event.at)
    view.put(SKILL_SESSIONS, session_key(event.member, event.execution),
             msgspec.structs.replace(session, uses=(*session.uses, use)))
    record_change(
        view, member=event.member, kind="use", subject=event.skill, before=_weight(event.weight_before),
        after=_weight(event.weight), basis=f"read in a session that {event.outcome}: score {event.score:g}",
        at=event.at, ref=event.execution,
    )


def _closable(view: View, event: SkillSessionClosed) -> bool:
    if _session(view, event.member, event.execution).closed:
        raise InvalidInput(f"the session of execution {event.execution} was already settled")
    return True


@projection(SkillSessionClosed, check=_closable)
def _closed(view: View, event: SkillSessionClosed) -> None:
    session = _session(view, event.member, event.execution)
    view.put(SKILL_SESSIONS, session_key(event.member, event.execution),
             msgspec.structs.replace(session, closed=True, outcome=event.outcome))


def _rescorable(view: View, event: SkillUseCorrected) -> bool:
    if event.compensates:
        compensable(view, event.compensates, "use")
    session = _session(view, event.member, event.execution)
    if not any(use.skill == event.skill and use.score == event.score_before for use in session.uses):
        raise InvalidInput(f"the use of {event.skill!r} in {event.execution} no longer scores {event.score_before:g}")
    _holding(view, event.member, event.skill)
    return True


@projection(SkillUseCorrected, check=_rescorable)
def _rescored(view: View, event: SkillUseCorrected) -> None:
    holding = _holding(view, event.member, event.skill)
    rescored = msgspec.structs.replace(holding, weight=event.weight)
    view.put(SKILL_HOLDINGS, holding_key(event.member, event.skill), rescored)
    session = _session(view, event.member, event.execution)
    uses = tuple(
        msgspec.structs.replace(use, score=event.score) if use.skill == event.skill else use for use in session.uses
    )
    view.put(SKILL_SESSIONS, session_key(event.member, event.execution), msgspec.structs.replace(session, uses=uses))
    record_change(
        view, member=event.member, kind="rescore", subject=event.skill, before=_weight(event.weight_before),
        after=_weight(event.weight), basis=event.basis, at=event.at, ref=event.execution,
        compensates=event.compensates,
    )
