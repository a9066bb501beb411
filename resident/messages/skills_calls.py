"""The skills operations' requests and replies (`rt.skills`): the team library and the members' skill sets."""

from __future__ import annotations

from typing import Annotated

import msgspec

from resident.messages.bounds import FilePath, Named, Text
from resident.messages.skills import MAX_SEARCH, PROJECTED_SKILLS, ChosenSkill, SkillMatch, TeamSkill, Track

__all__ = [
    "MAX_SKILL_BODY_BYTES", "AddSkillFile", "AddSkillFolder", "ChooseSkillsRequest", "ChosenSkills",
    "GiveSkillRequest", "LibraryQuery", "ReadSkillRequest", "RebuildSkills", "ReclaimSkillRequest",
    "SearchSkillsRequest", "SkillMatches", "SkillQuery", "SkillSetQuery", "Skills",
]

# A skill's SKILL.md travels in base64, up to the 256 KiB a skill file may hold.
MAX_SKILL_BODY_BYTES = (256 * 1024) * 4 // 3 + 64 * 1024
SkillName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class _Folder(_Request, frozen=True):
    # An absolute path on the runtime's machine (a relative one is the caller's working folder's, in process).
    path: FilePath


class AddSkillFolder(_Folder, frozen=True, kw_only=True):
    """Import the skill folder at `path` (its SKILL.md) into the team library; `derived_from` names the team skill
    it rewrites."""

    derived_from: Named | None = None


class _FileParts(_Request, frozen=True):
    folder: Named
    data: bytes


class AddSkillFile(_FileParts, frozen=True, kw_only=True):
    """A skill from its SKILL.md's bytes and its folder's name, which must be the skill's name."""

    derived_from: Named | None = None


class LibraryQuery(_Request, frozen=True):
    """Every team skill, by name."""


class Skills(msgspec.Struct, frozen=True, kw_only=True):
    """Team skills, by name."""

    skills: tuple[TeamSkill, ...]


class SkillQuery(_Request, frozen=True):
    """One team skill (reading it so records nothing; a member at work reads with `read`)."""

    name: SkillName


class ReadSkillRequest(_Request, frozen=True):
    """A skill's body; read in a member session, the read is recorded and becomes a use when the session ends."""

    skill: SkillName


class _SearchText(_Request, frozen=True):
    query: Text


class SearchSkillsRequest(_SearchText, frozen=True, kw_only=True):
    """Team skills matching `query` by name and description, best first."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_SEARCH)] = 20


class SkillMatches(msgspec.Struct, frozen=True, kw_only=True):
    query: str
    matches: tuple[SkillMatch, ...]


class _Given(_Request, frozen=True):
    skill: SkillName
    member: Named


class GiveSkillRequest(_Given, frozen=True, kw_only=True):
    """Sync a team skill into `member`'s set with an initial weight, on a decay track (the owner's call)."""

    weight: Annotated[float, msgspec.Meta(ge=0.0, le=1_000.0)] = 1.0
    track: Track = "sessions"


class _Reclaimed(_Request, frozen=True):
    skill: SkillName
    # The member taking it; a member session takes it for itself (leave it out).
    member: Named | None = None


class ReclaimSkillRequest(_Reclaimed, frozen=True):
    """A member takes a team skill (back) into its set: no approval, an event, a line in the weekly report."""


class _SetOf(_Request, frozen=True):
    # A member session's own set when left out.
    member: Named | None = None


class SkillSetQuery(_SetOf, frozen=True, kw_only=True):
    """A member's set: each skill's current weight, track, protection and last use."""

    include_left: bool = False


class _Chosen(_Request, frozen=True):
    member: Named
    task: Text


class ChooseSkillsRequest(_Chosen, frozen=True, kw_only=True):
    """The skills to project into `member`'s session on `task`: relevance first, weight second."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=PROJECTED_SKILLS)] = PROJECTED_SKILLS


class ChosenSkills(msgspec.Struct, frozen=True, kw_only=True):
    member: str
    task: str
    skills: tuple[ChosenSkill, ...]


class RebuildSkills(_Request, frozen=True):
    """Recompute every skill weight from the event log and compare it with the live state."""
