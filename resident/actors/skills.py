"""The skill library actor: searches the team library and ranks a member's skills for a task.

It keeps one keyword index of the library (`resident.skills.relevance`), a cache of LMDB. The
library only grows (skills are never removed from it), so the index is current exactly when it has
as many skills as the table: every request checks that count (one read) and rebuilds the index when
it has changed. A restarted incarnation starts with no index and builds it at its first request.
"""

from __future__ import annotations

from typing import Any

from resident.messages.skills import RankSkills, SearchSkills
from resident.skills.relevance import SkillIndex
from resident.store.store import Store
from resident.store.tables import SKILLS
from resident.supervisor import ChildContext, SupervisedActor

__all__ = ["SkillLibrary"]


class SkillLibrary(SupervisedActor):
    """Search and ranking over the team library."""

    def __init__(self, context: ChildContext, *, store: Store) -> None:
        super().__init__(context)
        self.store = store
        self._index: SkillIndex | None = None

    def handle(self, message: Any) -> Any:
        match message:
            case SearchSkills():
                return self._current().search(message.query, message.limit)
            case RankSkills():
                return self._current().choose(message.task, message.candidates, message.limit)
            case _:
                return super().handle(message)

    def _current(self) -> SkillIndex:
        with self.store.reader() as reader:
            if self._index is None or len(self._index) != reader.count(SKILLS):
                self._index = SkillIndex([skill for _, skill in reader.items(SKILLS)])
        return self._index
