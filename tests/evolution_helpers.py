"""Helpers for evolution tests: skill folders on disk, sessions dispatched to members, a runtime fixture."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from resident import Runtime
from resident.clock import ManualClock
from resident.runtime.coordination import Session, dispatch_session
from resident.runtime.runtime import host_context

__all__ = ["DAY", "SESSION_ACTIONS", "add_skills", "evolving", "session", "skill_folder"]

DAY = 86_400.0
SESSION_ACTIONS = ("recall", "remember", "fetch_skills", "write_skills", "propose_principle", "read_engagement",
                   "write_engagement")


def skill_folder(root: Path, name: str, description: str, body: str | None = None) -> Path:
    """A skill folder `root/name` with a well-formed SKILL.md."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    text = body if body is not None else f"# {name}\n\nSteps for {description.lower()}.\n"
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{text}", encoding="utf-8")
    return folder


def add_skills(rt: Runtime, root: Path, skills: Iterable[tuple[str, str]]) -> list[str]:
    """Add (name, description) skills to the team library; their names."""
    return [rt.skills.add(skill_folder(root, name, description)).name for name, description in skills]


def session(rt: Runtime, member: str, task: str = "routine work", actions: Iterable[str] = SESSION_ACTIONS,
            ttl: float = 3_600.0) -> Session:
    """A session of `member` (an execution dispatched to it) under a fresh owner grant."""
    wanted = set(actions)
    grant = rt.coordinator.issue_grant(actions=wanted, ttl=ttl)
    return dispatch_session(host_context(rt), task, member, role="implement", parent_grant=grant, actions=wanted)


@contextmanager
def evolving(home: Path, clock: ManualClock) -> Iterator[Runtime]:
    """A runtime on `home` with memory on, no Realm and a manual clock."""
    with Runtime.open(home, realm="none", clock=clock) as runtime:
        runtime.memory.enable()
        yield runtime
