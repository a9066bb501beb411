"""Skills: the team library, each member's skill set, sessions, uses and forgetting.

A team skill is stored once, in the library, and never removed. A member carries some of them in
its skill set, each as a `SkillHolding` with a weight: the holding stays stored when the skill is
forgotten (only `in_set` changes), so a reclaim or a rollback finds its history. A member's
session (for now: one execution dispatched to it) is a `SkillSession` that collects the skills read
during it; when it is settled after the execution ends, each read skill in the set gets a use.

Events carry the results their writer computed (the new weight, the skills forgotten) and the
inputs that produced them (score, session ordinal, time), so the store applies them as they are
and `skills rebuild` can recompute every weight from the inputs alone and compare.
"""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Event, Message, Record
from resident.messages.evolution import MemberCommand

__all__ = [
    "MAX_SEARCH",
    "PROJECTED_SKILLS",
    "TRACKS",
    "ChooseSkills",
    "ChosenSkill",
    "DeclareNatives",
    "ForgetCandidate",
    "ForgettingDryRun",
    "GetSkillSet",
    "GiveSkill",
    "HeldSkill",
    "NativeSkillsDeclared",
    "RankCandidate",
    "RankSkills",
    "ReadSkill",
    "ReclaimSkill",
    "RollBackSkillChange",
    "SearchSkills",
    "SettleSessions",
    "Settled",
    "SkillAdded",
    "SkillForgotten",
    "SkillGiven",
    "SkillHolding",
    "SkillMatch",
    "SkillRead",
    "SkillRebuild",
    "SkillReclaimed",
    "SkillRemoved",
    "SkillRestored",
    "SkillSession",
    "SkillSessionClosed",
    "SkillSessionOpened",
    "SkillSetView",
    "SkillUse",
    "SkillUseCorrected",
    "SkillUsed",
    "TeamSkill",
    "Track",
]

Track = Literal["sessions", "days"]
# A session projects at most this many skills; a search lists at most `MAX_SEARCH`.
PROJECTED_SKILLS = 10
MAX_SEARCH = 100
TRACKS: tuple[Track, ...] = ("sessions", "days")


# -- stored records ------------------------------------------------------------------------------


class TeamSkill(Record, frozen=True):
    """One skill of the team library, as imported from its SKILL.md folder."""

    name: str
    description: str
    body: str
    digest: str
    added_at: float
    added_by: str
    derived_from: str | None = None


class SkillHolding(Record, frozen=True):
    """One skill in (or once in) one member's set: its weight and where it stands on its track.

    `weight` is the value at the last update (`updated_session`, `updated_at`); the current weight
    decays from there. `added_session` starts the protection of a new skill.
    """

    member: str
    skill: str
    weight: float
    updated_session: int
    updated_at: float
    added_session: int
    added_at: float
    track: Track = "sessions"
    in_set: bool = True
    native: bool = False
    origin: Literal["given", "reclaimed", "native"] = "given"
    last_used_session: int | None = None
    last_used_at: float | None = None
    would_forget: bool = False
    left_at: float | None = None
    left_rule: str = ""


class SkillUse(Record, frozen=True):
    """A scored use of one skill in one session (the score drops to 0.0 when the owner corrects it)."""

    skill: str
    score: float
    session: int
    at: float


class SkillSession(Record, frozen=True):
    """One session of a member: which skills it read and, once settled, what each use scored."""

    member: str
    execution: str
    ordinal: int
    opened_at: float
    reads: tuple[str, ...] = ()
    closed: bool = False
    outcome: str = ""
    uses: tuple[SkillUse, ...] = ()


class ForgetCandidate(Record, frozen=True):
    """A skill the forgetting rules pick, which rule, and its weight at that moment."""

    skill: str
    rule: Literal["unused", "capacity"]
    weight: float


# -- events --------------------------------------------------------------------------------------


class SkillAdded(Event, frozen=True, tag="skill.added"):
    skill: TeamSkill


class _Joined(Event, frozen=True):
    """A team skill joins a member's set with `weight` on `track`, at the member's session `session`."""

    member: str
    skill: str
    weight: float
    track: Track
    session: int
    by: str
    basis: str = ""


class SkillGiven(_Joined, frozen=True, tag="skill.given"):
    """The owner syncs a team skill into a member's set with an initial weight."""


class SkillReclaimed(_Joined, frozen=True, tag="skill.reclaimed"):
    """A member takes a team skill (back) into its own set, without approval (weight: see `rejoined`)."""


class NativeSkillsDeclared(Event, frozen=True, tag="skill.natives"):
    """The native skills listed in the member's soul.md, as read when they last changed."""

    member: str
    skills: tuple[str, ...]
    digest: str
    session: int
    # The weight a native skill new to the set starts with.
    weight: float = 1.0


class SkillSessionOpened(Event, frozen=True, tag="skill.session.opened"):
    """A session of the member began (written with the execution's dispatch)."""

    member: str
    execution: str


class SkillRead(Event, frozen=True, tag="skill.read"):
    """The member read a skill's body inside a session (projection alone is never a read)."""

    member: str
    execution: str
    skill: str


class SkillUsed(Event, frozen=True, tag="skill.used"):
    """A read skill's use, scored when its session was settled; `weight` is the weight after it."""

    member: str
    skill: str
    execution: str
    outcome: str
    score: float
    session: int
    weight_before: float
    weight: float


class SkillSessionClosed(Event, frozen=True, tag="skill.session.closed"):
    """A session is settled: its uses are scored (written after them, in the same commit)."""

    member: str
    execution: str
    outcome: str


class SkillUseCorrected(Event, frozen=True, tag="skill.use.corrected"):
    """A use's score changes after the fact (an owner correction, or a rollback of the use)."""

    member: str
    skill: str
    execution: str
    score_before: float
    score: float
    weight_before: float
    weight: float
    basis: str
    compensates: str = ""


class SkillForgotten(Event, frozen=True, tag="skill.forgotten"):
    member: str
    skill: str
    rule: Literal["unused", "capacity"]
    weight: float
    session: int


class ForgettingDryRun(Event, frozen=True, tag="skill.forgetting.dry_run"):
    """In a member's first month: skills forgetting would now remove (`flagged`, nothing is removed),
    and skills flagged before that it no longer would (`cleared`)."""

    member: str
    flagged: tuple[ForgetCandidate, ...]
    cleared: tuple[str, ...]
    session: int


class SkillRemoved(Event, frozen=True, tag="skill.removed"):
    """A give or reclaim rolled back: the skill leaves the set (it stays in the library)."""

    member: str
    skill: str
    compensates: str
    basis: str


class SkillRestored(Event, frozen=True, tag="skill.restored"):
    """A forgetting rolled back: the skill is back in the set with the weight it had, protected anew."""

    member: str
    skill: str
    session: int
    compensates: str
    basis: str


# -- commands and replies ------------------------------------------------------------------------


class GiveSkill(MemberCommand, frozen=True, tag="skills.give"):
    skill: str
    weight: float = 1.0
    track: Track = "sessions"
    by: str = "owner"


class ReclaimSkill(MemberCommand, frozen=True, tag="skills.reclaim"):
    skill: str
    by: str


class DeclareNatives(MemberCommand, frozen=True, tag="skills.natives"):
    skills: tuple[str, ...]
    digest: str


class ReadSkill(MemberCommand, frozen=True, tag="skills.read"):
    """Record that the member read `skill` in the session of `execution`; answers the skill."""

    skill: str
    execution: str


class SettleSessions(MemberCommand, frozen=True, tag="skills.settle"):
    """Score the member's ended sessions and zero the uses of corrected ones (one, or all when None)."""

    execution: str | None = None


class Settled(Message, frozen=True, tag="skills.settled"):
    sessions: int
    corrections: int


class GetSkillSet(MemberCommand, frozen=True, tag="skills.set"):
    include_left: bool = False


class HeldSkill(Record, frozen=True):
    """A holding as shown: its current (decayed) weight, protection and last use."""

    skill: str
    weight: float
    track: Track
    native: bool
    in_set: bool
    protected_sessions: int
    last_used_session: int | None
    last_used_at: float | None
    would_forget: bool
    origin: str


class SkillSetView(Record, frozen=True):
    member: str
    sessions: int
    dry_run: bool
    skills: tuple[HeldSkill, ...]


class ChooseSkills(MemberCommand, frozen=True, tag="skills.choose"):
    """The skills to project into a session on `task`: relevance first, weight second."""

    task: str
    limit: int = 10


class RollBackSkillChange(MemberCommand, frozen=True, tag="skills.rollback"):
    change: str
    by: str
    reason: str = ""


class RankCandidate(Record, frozen=True):
    name: str
    weight: float


class RankSkills(Message, frozen=True, tag="skills.rank"):
    """Member → library: order these held skills for `task` and answer the best `limit`."""

    task: str
    candidates: tuple[RankCandidate, ...]
    limit: int


class ChosenSkill(Record, frozen=True):
    name: str
    description: str
    weight: float
    relevance: float


class SearchSkills(Message, frozen=True, tag="skills.search"):
    query: str
    limit: int = 20


class SkillMatch(Record, frozen=True):
    name: str
    description: str
    score: float
    derived_from: str | None = None


class SkillRebuild(Record, frozen=True):
    """Every holding recomputed from the event log, and where it differs from the live state."""

    events: int
    holdings: int
    differences: tuple[str, ...]
