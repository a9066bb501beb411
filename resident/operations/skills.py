"""Skills (`rt.skills`): the team library and each member's skill set, its weights and forgetting.

A member session may add skills to the library, search and read them (a read is recorded and becomes a use),
see and reclaim its own set; giving a skill to a member, choosing a session's skills and rebuilding are the
owner's.
"""

from __future__ import annotations

from resident.messages.skills import ChosenSkill, SkillMatch, SkillRebuild, SkillSetView, TeamSkill
from resident.messages.skills_calls import (
    MAX_SKILL_BODY_BYTES,
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
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = [
    "ADD", "ADD_FOLDER", "CHOOSE", "GIVE", "LIBRARY", "OPERATIONS", "READ", "REBUILD", "RECLAIM", "SEARCH", "SET",
    "SKILL", "SkillsSurface",
]

_SERVICES = "resident.runtime.skills.library"


def _skills(reply: Skills) -> list[TeamSkill]:
    return list(reply.skills)


def _matches(reply: SkillMatches) -> list[SkillMatch]:
    return list(reply.matches)


def _chosen(reply: ChosenSkills) -> list[ChosenSkill]:
    return list(reply.skills)


LIBRARY = declare(
    "skills.library", "The team skill library", LibraryQuery, Skills,
    route=Route("GET", "/v1/skills"), service=f"{_SERVICES}:library", result=_skills,
)
ADD = declare(
    "skills.add", "Add a skill (its SKILL.md) to the team library", AddSkillFile, TeamSkill,
    route=Route("POST", "/v1/skills", max_body=MAX_SKILL_BODY_BYTES), service=f"{_SERVICES}:add_file",
    access=Access.MEMBER,
)
ADD_FOLDER = declare(
    "skills.add_folder", "Add the skill folder at a path on the runtime's machine to the team library",
    AddSkillFolder, TeamSkill, route=Route("POST", "/v1/skills/folder"), service=f"{_SERVICES}:add_folder",
    access=Access.MEMBER,
)
SKILL = declare(
    "skills.skill", "One team skill (records nothing)", SkillQuery, TeamSkill,
    route=Route("GET", "/v1/skills/{name}"), service=f"{_SERVICES}:skill",
)
SET = declare(
    "skills.set", "A member's skill set: weights, tracks, last use", SkillSetQuery, SkillSetView,
    route=Route("POST", "/v1/skills/set"), service=f"{_SERVICES}:skill_set", access=Access.MEMBER,
)
SEARCH = declare(
    "skills.search", "Team skills matching a query", SearchSkillsRequest, SkillMatches,
    route=Route("POST", "/v1/skills/search"), service=f"{_SERVICES}:search", access=Access.MEMBER,
    result=_matches,
)
REBUILD = declare(
    "skills.rebuild", "Recompute every skill weight from the event log and compare it with the live state",
    RebuildSkills, SkillRebuild, route=Route("POST", "/v1/skills/rebuild"), service=f"{_SERVICES}:rebuild",
)
READ = declare(
    "skills.read", "A team skill's body (read in a member session, it is recorded and becomes a use)",
    ReadSkillRequest, TeamSkill, route=Route("POST", "/v1/skills/{skill}/read"), service=f"{_SERVICES}:read",
    access=Access.MEMBER,
)
GIVE = declare(
    "skills.give", "Sync a team skill into a member's set", GiveSkillRequest, SkillSetView,
    route=Route("POST", "/v1/skills/{skill}/give"), service=f"{_SERVICES}:give",
)
RECLAIM = declare(
    "skills.reclaim", "Take a team skill (back) into a member's set", ReclaimSkillRequest, SkillSetView,
    route=Route("POST", "/v1/skills/{skill}/reclaim"), service=f"{_SERVICES}:reclaim", access=Access.MEMBER,
)
CHOOSE = declare(
    "skills.choose", "The skills a member's session on a task would get", ChooseSkillsRequest, ChosenSkills,
    route=Route("POST", "/v1/members/{member}/skills/choose"), service=f"{_SERVICES}:choose", result=_chosen,
)

OPERATIONS = (LIBRARY, ADD, ADD_FOLDER, SKILL, SET, SEARCH, REBUILD, READ, GIVE, RECLAIM, CHOOSE)


class SkillsSurface(Surface):
    """`rt.skills`: the team library and the members' skill sets."""

    library = method(LIBRARY)
    alibrary = awaitable(LIBRARY)
    add = method(ADD_FOLDER)
    aadd = awaitable(ADD_FOLDER)
    add_file = method(ADD)
    aadd_file = awaitable(ADD)
    skill = method(SKILL)
    askill = awaitable(SKILL)
    skill_set = method(SET)
    askill_set = awaitable(SET)
    search = method(SEARCH)
    asearch = awaitable(SEARCH)
    rebuild = method(REBUILD)
    arebuild = awaitable(REBUILD)
    read = method(READ)
    aread = awaitable(READ)
    give = method(GIVE)
    agive = awaitable(GIVE)
    reclaim = method(RECLAIM)
    areclaim = awaitable(RECLAIM)
    choose = method(CHOOSE)
    achoose = awaitable(CHOOSE)
