"""Who may see a verified-knowledge entry: subject, project, repository, then visibility.

A subject is the home's owner (who administers every entry) or a member. A member is authorized for
a project through a registered repository of that project that lists it among its members; a
member session is further held to the repository of the work it was dispatched on. Once
authorized, a member sees the `project` entries of that repository and its own `private` ones,
never another member's private entries. Every read and every mutation asks `may_read` (or
`authorized`) before anything else.
"""

from __future__ import annotations

from dataclasses import dataclass

from resident.messages.knowledge import KnowledgeEntry, Repository

__all__ = ["Subject", "authorized", "may_read"]


@dataclass(frozen=True, slots=True)
class Subject:
    """Who asks. `member` None is the home's owner; `repositories`, when set, is all a session may ask about."""

    member: str | None
    repositories: frozenset[str] | None = None

    @classmethod
    def owner(cls) -> Subject:
        return cls(member=None)

    def describe(self) -> str:
        return "the owner" if self.member is None else f"member {self.member}"


def authorized(subject: Subject, repository: Repository | None, project: str) -> bool:
    """Whether `subject` may read anything of `project` through `repository` (None: not registered)."""
    if repository is None or repository.project != project:
        return False
    if subject.member is None:
        return True
    if subject.repositories is not None and repository.id not in subject.repositories:
        return False
    return subject.member in repository.members


def may_read(subject: Subject, entry: KnowledgeEntry, repository: Repository | None) -> bool:
    """Whether `subject` may see `entry`, `repository` being the registered one it belongs to."""
    if repository is None or repository.id != entry.repository:
        return False
    if not authorized(subject, repository, entry.project):
        return False
    return entry.visibility == "project" or subject.member is None or entry.owner == subject.member
