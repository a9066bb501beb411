"""`rt.skills`: the team library and each member's skill set.

    rt.skills.add("skills/deploy-k8s")                  # a SKILL.md folder into the team library
    rt.skills.give("deploy-k8s", "deven", weight=1.0)   # sync it into deven's set
    rt.skills.choose("deven", "roll out the api")       # at most 10 to project into a session
    rt.skills.read("deploy-k8s", session=session)       # a member reads it: recorded, a use at the end

Changes to a member's set go through its actor, one at a time; the library and search go through
the skill library actor. A member's native skills are read from its soul.md whenever its set is
used, so editing soul.md takes effect at the next call.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

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
from resident.messages.store import Commit
from resident.runtime.skill_files import read_skill_file, read_soul
from resident.skills.ledger import SkillLedger, differences
from resident.skills.skill_file import check_skill_name, parse_natives, parse_skill
from resident.store.tables import EXECUTIONS, SKILL_HOLDINGS, SKILLS

if TYPE_CHECKING:
    from resident.runtime.coordination import Session
    from resident.runtime.runtime import Runtime

__all__ = ["MAX_SEARCH", "PROJECTED_SKILLS", "SkillsControl"]

logger = logging.getLogger(__name__)


def _track(value: str) -> Track:
    if value not in TRACKS:
        raise InvalidInput(f"a decay track is one of {', '.join(TRACKS)}, not {value!r}")
    return value


def _limit(value: int, most: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise InvalidInput(f"{what} must be a whole number from 1 to {most}, not {value!r}")
    return value


class SkillsControl:
    """The team library and the members' skill sets."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        # The soul.md digest each member's natives were last recorded from: an unchanged file is
        # neither parsed nor sent to the member again (every write of natives goes through here).
        self._natives: dict[str, tuple[str, tuple[str, ...]]] = {}

    # -- the team library -------------------------------------------------------------------------

    def add(self, path: str | os.PathLike[str], *, derived_from: str | None = None, by: str = "owner") -> TeamSkill:
        """Import the skill folder at `path` into the team library (`SkillInvalid` naming what is wrong)."""
        self._runtime.check_open()
        folder, data = read_skill_file(path)
        return self.add_file(folder, data, derived_from=derived_from, by=by)

    def add_file(self, folder: str, data: bytes, *, derived_from: str | None = None, by: str = "owner") -> TeamSkill:
        """Import a skill from its SKILL.md's bytes and its folder's name (how the loopback API receives one)."""
        runtime = self._runtime
        runtime.check_open()
        parsed = parse_skill(folder, data)
        if derived_from is not None:
            check_skill_name(derived_from, "--derived-from")
        skill = TeamSkill(
            name=parsed.name, description=parsed.description, body=parsed.body, digest=parsed.digest,
            added_at=runtime.clock.time(), added_by=by, derived_from=derived_from,
        )
        runtime._internal.write(Commit(events=(SkillAdded(at=skill.added_at, skill=skill),)))
        return skill

    def library(self) -> list[TeamSkill]:
        """Every team skill, by name."""
        self._runtime.check_open()
        with self._runtime._internal.store.reader() as reader:
            return [skill for _, skill in reader.items(SKILLS)]

    def skill(self, name: str) -> TeamSkill:
        """One team skill (reading it this way records nothing; a member reads with `read`)."""
        self._runtime.check_open()
        check_skill_name(name)
        with self._runtime._internal.store.reader() as reader:
            skill = reader.get(SKILLS, name)
        if skill is None:
            raise UnknownSkill(f"no skill {name!r} in the team library; see `resident skills list`")
        return skill

    def search(self, query: str, *, limit: int = 20) -> list[SkillMatch]:
        """Team skills matching `query` by name and description, best first."""
        self._runtime.check_open()
        message = SearchSkills(query=clean_query(query), limit=_limit(limit, MAX_SEARCH, "a search limit"))
        matches: list[SkillMatch] = self._runtime._internal.wiring.skills.ask(message)
        return matches

    # -- member skill sets ------------------------------------------------------------------------

    def give(
        self, skill: str, member: str, *, weight: float = 1.0, track: str = "sessions", by: str = "owner"
    ) -> SkillSetView:
        """Sync a team skill into `member`'s set with an initial weight (the owner's call)."""
        check_skill_name(skill)
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise InvalidInput(f"a weight is a number, not {weight!r}")
        self.sync_natives(member)
        self._ask(member, GiveSkill(skill=skill, weight=float(weight), track=_track(track), by=by))
        return self.skill_set(member)

    def reclaim(self, skill: str, member: str, *, by: str) -> SkillSetView:
        """`member` takes a team skill (back) into its set: no approval, an event, a line in the weekly report."""
        check_skill_name(skill)
        self.sync_natives(member)
        self._ask(member, ReclaimSkill(skill=skill, by=by))
        return self.skill_set(member)

    def skill_set(self, member: str, *, include_left: bool = False) -> SkillSetView:
        """`member`'s set: each skill's current weight, track, protection and last use."""
        self.sync_natives(member)
        view: SkillSetView = self._ask(member, GetSkillSet(include_left=include_left))
        return view

    def choose(self, member: str, task: str, *, limit: int = PROJECTED_SKILLS) -> list[ChosenSkill]:
        """The skills to project into `member`'s session on `task`: relevance first, weight second."""
        message = ChooseSkills(task=clean_query(task), limit=_limit(limit, PROJECTED_SKILLS, "the projected skills"))
        self.sync_natives(member)
        chosen: list[ChosenSkill] = self._ask(member, message)
        return chosen

    def read(self, skill: str, *, session: Session) -> TeamSkill:
        """The skill's body for a member at work: the read is recorded and becomes a use when the session ends."""
        check_skill_name(skill)
        session.authorize("fetch_skills")
        read: TeamSkill = self._ask(session.member.name, ReadSkill(skill=skill, execution=session.execution.id))
        return read

    def sync_natives(self, member: str) -> tuple[str, ...]:
        """Read `member`'s soul.md and record its native skills if they changed; the natives."""
        runtime = self._runtime
        runtime.config.member(member)
        soul = read_soul(runtime.home, member)
        digest = "" if soul is None else soul[1]
        known = self._natives.get(member)
        if known is not None and known[0] == digest:
            return known[1]
        natives = () if soul is None else parse_natives(member, soul[0])
        self._ask(member, DeclareNatives(skills=natives, digest=digest))
        self._natives[member] = (digest, natives)
        return natives

    # -- sessions ---------------------------------------------------------------------------------

    def settle(self, member: str, execution: str | None = None) -> Settled:
        """Score `member`'s ended sessions (one, or all) and zero the uses of corrected ones."""
        settled: Settled = self._ask(member, SettleSessions(execution=execution))
        return settled

    def settle_execution(self, execution_id: str) -> None:
        """Settle the session of an execution that just ended or was corrected.

        The execution's own record is already durable; if settling fails now, the member settles
        it when its actor next starts, so this logs instead of failing the caller.
        """
        with self._runtime._internal.store.reader() as reader:
            execution = reader.get(EXECUTIONS, execution_id)
        if execution is None:
            return
        try:
            self.settle(execution.member, execution_id)
        except ResidentError as error:
            logger.warning("the skills read in %s are not scored yet (%s); they will be at the next start",
                           execution_id, error)

    # -- rebuild ----------------------------------------------------------------------------------

    def rebuild(self) -> SkillRebuild:
        """Recompute every holding from the event log and compare it with the live state."""
        runtime = self._runtime
        runtime.check_open()
        ledger = SkillLedger()
        with runtime._internal.store.reader() as reader:
            events: list[AnyEvent] = [event for _, event in reader.events()]
            live = [holding for _, holding in reader.items(SKILL_HOLDINGS)]
        found = differences(live, ledger.fold(events))
        return SkillRebuild(events=len(events), holdings=len(live), differences=tuple(found))

    def _ask(self, member: str, message: object) -> Any:
        return self._runtime._services.ask_member(member, message, None)
