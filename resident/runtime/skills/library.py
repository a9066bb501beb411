"""`rt.skills`: the team library and each member's skill set.

    rt.skills.add("skills/deploy-k8s")                  # a SKILL.md folder into the team library
    rt.skills.give("deploy-k8s", "deven", weight=1.0)   # sync it into deven's set
    rt.skills.choose("deven", "roll out the api")       # at most 10 to project into a session
    rt.with_grant(token).skills.read("deploy-k8s")      # a member at work reads it: recorded, a use at the end

Changes to a member's set go through its actor, one at a time; the library and search go through
the skill library actor. A member's native skills are read from its soul.md whenever its set is
used, so editing soul.md takes effect at the next call. Declared in `resident.operations.skills`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from resident.errors import InvalidInput, ResidentError, UnknownSkill
from resident.memory.records import clean_query
from resident.messages.events import AnyEvent
from resident.messages.skills import (
    MAX_SEARCH,
    PROJECTED_SKILLS,
    TRACKS,
    ChooseSkills,
    ChosenSkill,
    DeclareNatives,
    GetSkillSet,
    GiveSkill,
    ReadSkill,
    ReclaimSkill,
    SearchSkills,
    Settled,
    SettleSessions,
    SkillAdded,
    SkillMatch,
    SkillRebuild,
    SkillSetView,
    TeamSkill,
    Track,
)
from resident.messages.skills_calls import (
    AddSkillFile,
    AddSkillFolder,
    ChooseSkillsRequest,
    ChosenSkills,
    GiveSkillRequest,
    LibraryQuery,
    ReadSkillRequest,
    RebuildSkills,
    ReclaimSkillRequest,
    SearchSkillsRequest,
    SkillMatches,
    SkillQuery,
    Skills,
    SkillSetQuery,
)
from resident.messages.store import Commit
from resident.runtime.context import Call, Context
from resident.runtime.skills.files import read_skill_file, read_soul
from resident.skills.ledger import SkillLedger, differences
from resident.skills.skill_file import check_skill_name, parse_natives, parse_skill
from resident.store.tables import EXECUTIONS, SKILL_HOLDINGS, SKILLS

__all__ = [
    "MAX_SEARCH", "PROJECTED_SKILLS", "add_file", "add_folder", "choose", "give", "library", "read", "rebuild",
    "reclaim", "search", "settle", "settle_execution", "skill", "skill_set", "sync_natives",
]

logger = logging.getLogger(__name__)


def _track(value: str) -> Track:
    if value not in TRACKS:
        raise InvalidInput(f"a decay track is one of {', '.join(TRACKS)}, not {value!r}")
    return value


def _limit(value: int, most: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise InvalidInput(f"{what} must be a whole number from 1 to {most}, not {value!r}")
    return value


def _by(call: Call) -> str:
    """Who a change is recorded as made by: the session's member, or the owner."""
    return call.caller.member or "owner"


# -- the team library -----------------------------------------------------------------------------


def add_folder(context: Context, call: Call, request: AddSkillFolder) -> TeamSkill:
    """Import the skill folder at `path` into the team library (`SkillInvalid` naming what is wrong)."""
    context.check_open()
    path = Path(request.path)
    if call.remote and not path.is_absolute():
        raise InvalidInput(f"a skill folder sent over the API must be an absolute path, not {request.path!r}")
    folder, data = read_skill_file(path)
    return _add(context, call, folder, data, request.derived_from)


def add_file(context: Context, call: Call, request: AddSkillFile) -> TeamSkill:
    """Import a skill from its SKILL.md's bytes and its folder's name (how the loopback API receives one)."""
    return _add(context, call, request.folder, request.data, request.derived_from)


def _add(context: Context, call: Call, folder: str, data: bytes, derived_from: str | None) -> TeamSkill:
    context.check_open()
    call.caller.authorize("write_skills")
    parsed = parse_skill(folder, data)
    if derived_from is not None:
        check_skill_name(derived_from, "--derived-from")
    skill = TeamSkill(
        name=parsed.name, description=parsed.description, body=parsed.body, digest=parsed.digest,
        added_at=context.clock.time(), added_by=_by(call), derived_from=derived_from,
    )
    context.write(Commit(events=(SkillAdded(at=skill.added_at, skill=skill),)))
    return skill


def library(context: Context, _call: Call, _request: LibraryQuery) -> Skills:
    """Every team skill, by name."""
    context.check_open()
    with context.store.reader() as reader:
        return Skills(skills=tuple(skill for _, skill in reader.items(SKILLS)))


def skill(context: Context, _call: Call, request: SkillQuery) -> TeamSkill:
    """One team skill (reading it this way records nothing; a member reads with `read`)."""
    return _team_skill(context, request.name)


def _team_skill(context: Context, name: str) -> TeamSkill:
    context.check_open()
    check_skill_name(name)
    with context.store.reader() as reader:
        found = reader.get(SKILLS, name)
    if found is None:
        raise UnknownSkill(f"no skill {name!r} in the team library; see `resident skills list`")
    return found


def search(context: Context, call: Call, request: SearchSkillsRequest) -> SkillMatches:
    """Team skills matching `query` by name and description, best first."""
    context.check_open()
    call.caller.authorize("fetch_skills")
    message = SearchSkills(query=clean_query(request.query), limit=_limit(request.limit, MAX_SEARCH, "a search limit"))
    matches: list[SkillMatch] = context.skills.ask(message)
    return SkillMatches(query=request.query, matches=tuple(matches))


# -- member skill sets ----------------------------------------------------------------------------


def give(context: Context, _call: Call, request: GiveSkillRequest) -> SkillSetView:
    """Sync a team skill into `member`'s set with an initial weight (the owner's call)."""
    check_skill_name(request.skill)
    weight = request.weight
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise InvalidInput(f"a weight is a number, not {weight!r}")
    sync_natives(context, request.member)
    track = _track(request.track)
    context.ask_member(request.member, GiveSkill(skill=request.skill, weight=float(weight), track=track, by="owner"),
                       None)
    return _skill_set(context, request.member, include_left=False)


def reclaim(context: Context, call: Call, request: ReclaimSkillRequest) -> SkillSetView:
    """A member takes a team skill (back) into its set: no approval, an event, a line in the weekly report."""
    call.caller.authorize("fetch_skills")
    member = call.caller.acting_as(request.member)
    check_skill_name(request.skill)
    sync_natives(context, member)
    context.ask_member(member, ReclaimSkill(skill=request.skill, by=_by(call)), None)
    return _skill_set(context, member, include_left=False)


def skill_set(context: Context, call: Call, request: SkillSetQuery) -> SkillSetView:
    """A member's set: each skill's current weight, track, protection and last use."""
    call.caller.authorize("fetch_skills")
    return _skill_set(context, call.caller.acting_as(request.member), include_left=request.include_left)


def _skill_set(context: Context, member: str, *, include_left: bool) -> SkillSetView:
    sync_natives(context, member)
    view: SkillSetView = context.ask_member(member, GetSkillSet(include_left=include_left), None)
    return view


def choose(context: Context, _call: Call, request: ChooseSkillsRequest) -> ChosenSkills:
    """The skills to project into `member`'s session on `task`: relevance first, weight second."""
    chosen = chosen_skills(context, request.member, request.task, limit=request.limit)
    return ChosenSkills(member=request.member, task=request.task, skills=tuple(chosen))


def chosen_skills(context: Context, member: str, task: str, *, limit: int = PROJECTED_SKILLS) -> list[ChosenSkill]:
    """`choose`, for the runtime's own session start."""
    limit = _limit(limit, PROJECTED_SKILLS, "the projected skills")
    message = ChooseSkills(task=clean_query(task), limit=limit)
    sync_natives(context, member)
    chosen: list[ChosenSkill] = context.ask_member(member, message, None)
    return chosen


def read(context: Context, call: Call, request: ReadSkillRequest) -> TeamSkill:
    """A skill's body; a member at work reads it under its grant, recorded, and it becomes a use at the end."""
    session = call.caller.session
    if session is None:
        return _team_skill(context, request.skill)
    check_skill_name(request.skill)
    session.authorize("fetch_skills")
    message = ReadSkill(skill=request.skill, execution=session.execution.id)
    found: TeamSkill = context.ask_member(session.member.name, message, None)
    return found


def sync_natives(context: Context, member: str) -> tuple[str, ...]:
    """Read `member`'s soul.md and record its native skills if they changed; the natives.

    The soul.md digest each member's natives were last recorded from is kept in the context: an unchanged
    file is neither parsed nor sent to the member again (every write of natives goes through here).
    """
    context.config.member(member)
    soul = read_soul(context.home, member)
    digest = "" if soul is None else soul[1]
    known = context.natives.get(member)
    if known is not None and known[0] == digest:
        return known[1]
    natives = () if soul is None else parse_natives(member, soul[0])
    context.ask_member(member, DeclareNatives(skills=natives, digest=digest), None)
    context.natives[member] = (digest, natives)
    return natives


# -- sessions -------------------------------------------------------------------------------------


def settle(context: Context, member: str, execution: str | None = None) -> Settled:
    """Score `member`'s ended sessions (one, or all) and zero the uses of corrected ones."""
    settled: Settled = context.ask_member(member, SettleSessions(execution=execution), None)
    return settled


def settle_execution(context: Context, execution_id: str) -> None:
    """Settle the session of an execution that just ended or was corrected.

    The execution's own record is already durable; if settling fails now, the member settles
    it when its actor next starts, so this logs instead of failing the caller.
    """
    with context.store.reader() as reader:
        execution = reader.get(EXECUTIONS, execution_id)
    if execution is None:
        return
    try:
        settle(context, execution.member, execution_id)
    except ResidentError as error:
        logger.warning("the skills read in %s are not scored yet (%s); they will be at the next start",
                       execution_id, error)


# -- rebuild --------------------------------------------------------------------------------------


def rebuild(context: Context, _call: Call, _request: RebuildSkills) -> SkillRebuild:
    """Recompute every holding from the event log and compare it with the live state."""
    context.check_open()
    ledger = SkillLedger()
    with context.store.reader() as reader:
        events: list[AnyEvent] = [event for _, event in reader.events()]
        live = [holding for _, holding in reader.items(SKILL_HOLDINGS)]
    found = differences(live, ledger.fold(events))
    return SkillRebuild(events=len(events), holdings=len(live), differences=tuple(found))
