"""Which skills fit a task: keyword relevance over the team library, then weight.

Each library skill is indexed by its name (hyphens read as spaces) and its description — the
SKILL.md field meant to say when to use it — with the same analysis and BM25 as memory recall, so
Chinese, Spanish and English tasks match alike. Document frequencies are over the whole library.

Choosing the skills projected into a session is *relevance first, weight second*: each held skill's
BM25 score is put in one of ten bands relative to the best score for the task, and skills are
ordered by band, then by current weight, then by exact score; skills that share no term with the
task come last, by weight. So a clearly more relevant skill always wins, and among skills about as
relevant the one the member has used more (and better, and more recently) goes first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from resident.memory.keyword import KeywordIndex
from resident.messages.skills import ChosenSkill, RankCandidate, SkillMatch, TeamSkill

__all__ = ["RELEVANCE_BANDS", "SkillIndex", "indexed_text"]

RELEVANCE_BANDS = 10


def indexed_text(skill: TeamSkill) -> str:
    """What a skill is found by: its name as words, and its description."""
    return f"{skill.name.replace('-', ' ')}\n{skill.description}"


class SkillIndex:
    """A keyword index of the library, in the order the skills were listed."""

    def __init__(self, skills: Sequence[TeamSkill]) -> None:
        self._skills = list(skills)
        self._rows = {skill.name: row for row, skill in enumerate(self._skills)}
        self._keyword = KeywordIndex.build([indexed_text(skill) for skill in self._skills])

    def __len__(self) -> int:
        return len(self._skills)

    def search(self, query: str, limit: int) -> list[SkillMatch]:
        """The library skills that best match `query` (sharing at least one term), best first."""
        rows, scores = self._keyword.search(query, None, limit)
        return [
            SkillMatch(
                name=self._skills[row].name,
                description=self._skills[row].description,
                score=round(float(score), 6),
                derived_from=self._skills[row].derived_from,
            )
            for row, score in zip(rows.tolist(), scores.tolist(), strict=True)
        ]

    def choose(self, task: str, candidates: Sequence[RankCandidate], limit: int) -> list[ChosenSkill]:
        """At most `limit` of the held `candidates` for `task`: relevance first, weight second."""
        held = [c for c in candidates if c.name in self._rows]
        if not held or limit <= 0:
            return []
        mask = np.zeros(len(self._skills), dtype=np.bool_)
        mask[[self._rows[c.name] for c in held]] = True
        rows, scores = self._keyword.search(task, mask, len(held))
        relevance = dict(zip((self._skills[row].name for row in rows.tolist()), scores.tolist(), strict=True))
        best = max(relevance.values(), default=0.0)

        def order(candidate: RankCandidate) -> tuple[int, float, float, str]:
            score = relevance.get(candidate.name, 0.0)
            band = math.ceil(RELEVANCE_BANDS * score / best) if score > 0 else 0
            return (-band, -candidate.weight, -score, candidate.name)

        chosen = sorted(held, key=order)[:limit]
        return [
            ChosenSkill(
                name=c.name,
                description=self._skills[self._rows[c.name]].description,
                weight=c.weight,
                relevance=round(relevance.get(c.name, 0.0), 6),
            )
            for c in chosen
        ]
