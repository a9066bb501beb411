"""Choosing a session's skills: relevance to the task first, weight second, at most the limit."""

from __future__ import annotations

from resident.messages.skills import RankCandidate, TeamSkill
from resident.skills.relevance import SkillIndex


def skill(name: str, description: str) -> TeamSkill:
    return TeamSkill(name=name, description=description, body="...", digest="0" * 64, added_at=0.0, added_by="owner")


LIBRARY = SkillIndex([
    skill("deploy-k8s", "Deploy services to a Kubernetes cluster with kubectl and helm"),
    skill("deploy-legacy", "Deploy the legacy monolith to the old virtual machines"),
    skill("triage", "Triage incoming bug reports and label them"),
    skill("code-review", "Review a pull request for correctness and style"),
    skill("despliegue", "Desplegar la aplicación en producción con cuidado"),
    skill("bushu", "部署服务到生产环境的步骤"),
])


def held(**weights: float) -> list[RankCandidate]:
    return [RankCandidate(name=name.replace("_", "-"), weight=weight) for name, weight in weights.items()]


def test_a_clearly_more_relevant_skill_wins_over_a_heavier_one() -> None:
    chosen = LIBRARY.choose("review this pull request", held(code_review=0.2, triage=9.0), limit=10)
    assert [c.name for c in chosen] == ["code-review", "triage"]
    assert chosen[0].relevance > 0
    assert chosen[1].relevance == 0


def test_among_skills_about_as_relevant_the_heavier_one_goes_first() -> None:
    light_first = LIBRARY.choose("deploy", held(deploy_k8s=0.5, deploy_legacy=3.0), limit=10)
    heavy_first = LIBRARY.choose("deploy", held(deploy_k8s=3.0, deploy_legacy=0.5), limit=10)
    assert [c.name for c in light_first] == ["deploy-legacy", "deploy-k8s"]
    assert [c.name for c in heavy_first] == ["deploy-k8s", "deploy-legacy"]


def test_at_most_the_limit_is_chosen_and_unrelated_skills_fill_in_by_weight() -> None:
    candidates = held(deploy_k8s=1.0, deploy_legacy=1.0, triage=5.0, code_review=2.0, despliegue=3.0, bushu=4.0)
    chosen = LIBRARY.choose("kubernetes helm", candidates, limit=3)
    assert [c.name for c in chosen] == ["deploy-k8s", "triage", "bushu"]


def test_chinese_and_spanish_tasks_find_their_skills() -> None:
    candidates = held(deploy_k8s=1.0, despliegue=1.0, bushu=1.0, triage=1.0)
    assert LIBRARY.choose("把服务部署到生产", candidates, limit=1)[0].name == "bushu"
    assert LIBRARY.choose("desplegar en producción", candidates, limit=1)[0].name == "despliegue"


def test_only_held_skills_in_the_library_are_chosen() -> None:
    chosen = LIBRARY.choose("deploy", [*held(triage=1.0), RankCandidate(name="not-in-library", weight=9.0)], limit=10)
    assert [c.name for c in chosen] == ["triage"]
    assert LIBRARY.choose("deploy", [], limit=10) == []


def test_search_covers_the_whole_library_best_first_and_only_matching_skills() -> None:
    found = LIBRARY.search("deploy kubernetes", limit=10)
    assert [m.name for m in found][:2] == ["deploy-k8s", "deploy-legacy"]
    assert all(m.score > 0 for m in found)
    assert LIBRARY.search("astronomy", limit=10) == []
    assert SkillIndex([]).search("deploy", limit=10) == []
