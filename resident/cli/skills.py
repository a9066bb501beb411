"""`resident skills …`: the team skill library and each member's skill set."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import runtime_for
from resident.errors import StateDiverged
from resident.messages.skills import MAX_SEARCH, PROJECTED_SKILLS, SkillSetView
from resident.messages.skills_calls import (
    AddSkillFile,
    ChooseSkillsRequest,
    GiveSkillRequest,
    LibraryQuery,
    ReadSkillRequest,
    RebuildSkills,
    ReclaimSkillRequest,
    SearchSkillsRequest,
    SkillSetQuery,
)
from resident.operations import skills as ops
from resident.runtime.caller import presented_token

__all__ = ["COMMANDS"]


def _when(timestamp: float | None) -> str:
    return "-" if timestamp is None else datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d")


def _print_set(view: SkillSetView) -> None:
    mode = "first month: forgetting is a dry run" if view.dry_run else "forgetting applies"
    rows = [
        (
            held.skill,
            f"{held.weight:.3f}",
            held.track,
            "native" if held.native else (f"{held.protected_sessions} sessions" if held.protected_sessions else "-"),
            "-" if held.last_used_session is None else f"session {held.last_used_session}, {_when(held.last_used_at)}",
            ("in set" if held.in_set else "forgotten") + (" (would forget)" if held.would_forget else ""),
        )
        for held in sorted(view.skills, key=lambda h: (-h.weight, h.skill))
    ]
    print_table(
        ("skill", "weight", "track", "protected", "last use", "state"), rows, ids=("skill",),
        title=f"{view.member}: {len(rows)} skills after {view.sessions} sessions ({mode})",
    )


@click.group()
def skills() -> None:
    """The team skill library (SKILL.md folders) and each member's skill set, with weights.

    \b
    resident skills add skills/deploy-k8s        import a skill into the team library
    resident skills give deploy-k8s deven        sync it into deven's set (weight 1.0)
    resident skills list --member deven          deven's set: weights, tracks, protection, last use
    resident skills read deploy-k8s              inside a session: the body (recorded as a read)
    """


@skills.command(name="add")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--derived-from", type=UTF8, metavar="SKILL", help="The team skill this one rewrites.")
@json_option
@pass_state
def add_command(state: CliState, path: Path, derived_from: str | None, as_json: bool) -> None:
    """Import the skill folder PATH (its SKILL.md) into the team library.

    SKILL.md starts with YAML front matter: `name` (kebab-case, at most 64 characters, the
    folder's name) and `description` (at most 1,024 characters); its Markdown body is what a
    member reads. A rewrite of a skill is a new skill with its own name and --derived-from.
    """
    # SKILL.md is read here, on this side of the API, and travels whole.
    from resident.runtime.skills.files import read_skill_file  # noqa: PLC0415 - loaded only when this runs

    with runtime_for(state) as runtime:
        folder, data = read_skill_file(path)
        skill = runtime.run(ops.ADD, AddSkillFile(folder, data, derived_from=derived_from))
    if as_json:
        emit_json(skill)
    else:
        stdout.print(f"added {skill.name} to the team library")


@skills.command(name="list")
@click.option("--member", type=UTF8, metavar="MEMBER", help="List MEMBER's skill set instead of the library.")
@click.option("--all", "include_left", is_flag=True, help="With --member: also the skills it has forgotten.")
@json_option
@pass_state
def list_command(state: CliState, member: str | None, include_left: bool, as_json: bool) -> None:
    """The team library, or a member's skill set (a member session lists its own).

    A set lists each skill's current weight, its decay track (sessions or days), how many more
    sessions a new skill is protected for (natives never leave), and its last use.
    """
    # The owner (no grant token presented) without --member lists the library; a session its own set.
    library = member is None and presented_token(os.environ) is None
    with runtime_for(state) as runtime:
        if library:
            skills_found = runtime.run(ops.LIBRARY, LibraryQuery()).skills
        else:
            view = runtime.run(ops.SET, SkillSetQuery(member, include_left=include_left))
    if library:
        if as_json:
            emit_json({"skills": skills_found})
            return
        print_table(
            ("skill", "description", "derived from", "added by"),
            ((s.name, s.description, s.derived_from or "-", s.added_by) for s in skills_found),
            ids=("skill",), title=f"team library: {len(skills_found)} skills",
        )
        return
    if as_json:
        emit_json(view)
    else:
        _print_set(view)


@skills.command()
@click.argument("skill", type=UTF8)
@click.argument("member", type=UTF8)
@click.option("--weight", type=click.FloatRange(0, 1000), default=1.0, show_default=True, help="Initial weight.")
@click.option("--track", type=click.Choice(["sessions", "days"]), default="sessions", show_default=True,
              help="What the weight decays by: the member's sessions (half-life 30) or days (half-life 60).")
@json_option
@pass_state
def give(state: CliState, skill: str, member: str, weight: float, track: str, as_json: bool) -> None:
    """Sync team skill SKILL into MEMBER's set with an initial weight (the owner's call)."""
    with runtime_for(state) as runtime:
        view = runtime.run(
            ops.GIVE, GiveSkillRequest(skill, member, weight=weight, track=track)  # type: ignore[arg-type]  # a --track choice
        )
    if as_json:
        emit_json(view)
    else:
        stdout.print(f"{member} now carries {skill} (weight {weight:g}, {track} track)")


@skills.command()
@click.argument("skill", type=UTF8)
@click.option("--member", type=UTF8, metavar="MEMBER", help="Whose set (a member session: its own).")
@json_option
@pass_state
def reclaim(state: CliState, skill: str, member: str | None, as_json: bool) -> None:
    """Take team skill SKILL (back) into a member's set: no approval; an event in the weekly report."""
    with runtime_for(state) as runtime:
        view = runtime.run(ops.RECLAIM, ReclaimSkillRequest(skill, member))
    if as_json:
        emit_json(view)
    else:
        stdout.print(f"{view.member} reclaimed {skill}")


@skills.command()
@click.argument("skill", type=UTF8)
@json_option
@pass_state
def read(state: CliState, skill: str, as_json: bool) -> None:
    """Print SKILL's body. Inside a member session the read is recorded, and becomes a use at its end.

    Being projected into a session is never a use; reading the body is.
    """
    with runtime_for(state) as runtime:
        found = runtime.run(ops.READ, ReadSkillRequest(skill))
    if as_json:
        emit_json(found)
    else:
        stdout.print(found.body, end="" if found.body.endswith("\n") else "\n")


@skills.command()
@click.argument("query", type=UTF8)
@click.option("--limit", type=click.IntRange(1, MAX_SEARCH), default=20, show_default=True,
              help="At most this many skills.")
@json_option
@pass_state
def search(state: CliState, query: str, limit: int, as_json: bool) -> None:
    """Team skills matching QUERY by name and description, best first."""
    with runtime_for(state) as runtime:
        matches = runtime.run(ops.SEARCH, SearchSkillsRequest(query, limit=limit)).matches
    if as_json:
        emit_json({"query": query, "matches": matches})
        return
    if not matches:
        stdout.print("no skill matches")
        return
    print_table(("skill", "score", "description"), ((m.name, f"{m.score:.3f}", m.description) for m in matches),
                ids=("skill",))


@skills.command()
@click.argument("member", type=UTF8)
@click.argument("task", type=UTF8)
@click.option("--limit", type=click.IntRange(1, PROJECTED_SKILLS), default=PROJECTED_SKILLS, show_default=True,
              help="At most this many skills (a session projects at most 10).")
@json_option
@pass_state
def choose(state: CliState, member: str, task: str, limit: int, as_json: bool) -> None:
    """The skills MEMBER's session on TASK would get: relevance first, weight second (at most 10)."""
    with runtime_for(state) as runtime:
        chosen = runtime.run(ops.CHOOSE, ChooseSkillsRequest(member, task, limit=limit)).skills
    if as_json:
        emit_json({"member": member, "task": task, "skills": chosen})
        return
    print_table(("skill", "relevance", "weight", "description"),
                ((c.name, f"{c.relevance:.3f}", f"{c.weight:.3f}", c.description) for c in chosen), ids=("skill",))


@skills.command()
@json_option
@pass_state
def rebuild(state: CliState, as_json: bool) -> None:
    """Recompute every skill weight from the event log and check it equals the live state.

    Exits 1 with StateDiverged, listing the differences, if the store's state no longer matches
    its events (restore the home from a backup then).
    """
    with runtime_for(state) as runtime:
        result = runtime.run(ops.REBUILD, RebuildSkills())
    if result.differences:
        shown = "; ".join(result.differences[:5])
        raise StateDiverged(f"{len(result.differences)} skill holdings differ from their events: {shown}")
    if as_json:
        emit_json(result)
    else:
        stdout.print(f"{result.holdings} holdings recomputed from {result.events} events: all equal the live state")


COMMANDS = (skills,)
