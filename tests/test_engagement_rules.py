"""Engagement as pure rules: entry rules, the judge, the resolution order, and narrowing that never widens."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resident.config import load_config
from resident.engagement.judge import KeywordJudge
from resident.engagement.narrowing import allows, narrowing
from resident.engagement.resolution import resolve
from resident.engagement.rules import EngagementConfig, EntryRule, parse_engagement
from resident.errors import ConfigError
from resident.messages.engagement import EngagementContext, EngagementDecision, EngagementExample, EngagementState
from resident.messages.memory import Activation

RULES = EngagementConfig(threshold=0.7, rules=(
    EntryRule(directory="/work/acme", domain="work", project="acme"),
    EntryRule(harness="pi", task="diary", domain="personal"),
))


def decided(confidence: float) -> EngagementDecision:
    return EngagementDecision(domain="work", project="beta", confidence=confidence, judge="test")


def run(current: EngagementState | None, context: EngagementContext, confidence: float,
        open_question: str | None = None):
    return resolve("deven", current, context, RULES, lambda: decided(confidence), open_question=open_question,
                   new_question_id=lambda: "q_new", at=5.0)


def test_an_explicit_switch_that_is_held_wins_over_rules_and_the_judge() -> None:
    held = EngagementState(member="deven", at=1.0, domain="personal", source="explicit", held=True)
    assert run(held, EngagementContext(directory="/work/acme"), 1.0).state is None


def test_an_entry_rule_decides_before_the_judge_matching_whole_path_components() -> None:
    inside = run(None, EngagementContext(directory="/work/acme/api", harness="codex"), 1.0).state
    assert inside is not None
    assert (inside.source, inside.domain, inside.project) == ("entry-rule", "work", "acme")
    for elsewhere in ("/work/acme2", "/work/acme/../other", "/work"):
        state = run(None, EngagementContext(directory=elsewhere), 0.9).state
        assert state is not None, elsewhere
        assert state.source == "judge", elsewhere
    diary = run(None, EngagementContext(harness="pi", task="write my Diary"), 0.0).state
    assert diary is not None
    assert (diary.source, diary.domain) == ("entry-rule", "personal")


def test_below_the_threshold_the_owner_is_asked_once_and_the_restricted_state_applies() -> None:
    first = run(None, EngagementContext(task="something vague"), 0.69)
    assert first.question is not None
    assert first.question.id == "q_new"
    assert first.state is not None
    assert first.state.restricted
    assert first.state.question == "q_new"
    again = run(first.state, EngagementContext(task="more vagueness"), 0.1, open_question="q_new")
    assert again.question is None
    assert again.state is not None
    assert again.state.restricted
    sure = run(first.state, EngagementContext(task="beta work"), 0.7).state
    assert sure is not None
    assert (sure.source, sure.project, sure.restricted) == ("judge", "beta", False)


def example(task: str, domain: str | None, project: str | None) -> EngagementExample:
    return EngagementExample(member="deven", context=EngagementContext(task=task), domain=domain,  # type: ignore[arg-type]
                             project=project, source="answer", at=0.0)


def test_the_keyword_judge_learns_from_examples_and_is_never_sure_of_what_it_has_not_seen() -> None:
    judge = KeywordJudge()
    assert judge.decide(EngagementContext(task="deploy acme"), []).confidence == 0.0
    examples = [
        example("deploy the acme api", "work", "acme"), example("fix acme billing bug", "work", "acme"),
        example("plan the garden party", "personal", None), example("birthday gift for mum", "personal", None),
        example("review acme pull request", "work", "acme"),
    ]
    work = judge.decide(EngagementContext(task="acme api bug"), examples)
    assert (work.domain, work.project) == ("work", "acme")
    assert work.confidence > 0.7
    home = judge.decide(EngagementContext(task="garden party gift"), examples)
    assert (home.domain, home.project) == ("personal", None)
    assert home.confidence > 0.7
    assert judge.decide(EngagementContext(task="quantum chromodynamics"), examples).confidence == 0.0
    half = judge.decide(EngagementContext(task="acme quantum chromodynamics lecture"), examples)
    assert 0.0 < half.confidence < work.confidence
    assert judge.decide(EngagementContext(task="acme api bug"), examples) == work


DOMAIN = st.sampled_from([None, "work", "personal"])
PROJECT = st.sampled_from([None, "acme", "beta"])
ACTIVATIONS = st.builds(Activation, domain=DOMAIN, project=PROJECT)
STATES = st.one_of(
    st.none(),
    st.builds(EngagementState, member=st.just("deven"), at=st.just(0.0), domain=DOMAIN, project=PROJECT,
              restricted=st.booleans()),
)


def recall_passes(asked: Activation, record: Activation) -> bool:
    """The substrate's activation filter: a condition passes when either side says nothing or both agree."""
    return all(
        wanted is None or value is None or value == wanted
        for wanted, value in ((asked.domain, record.domain), (asked.project, record.project))
    )


@given(ACTIVATIONS, STATES, ACTIVATIONS)
def test_engagement_only_narrows_what_a_recall_may_return(
    asked: Activation, state: EngagementState | None, record: Activation
) -> None:
    plan = narrowing(asked, state)
    served = recall_passes(plan.activation, record) and (not plan.filter_hits or allows(state, record))
    assert served == (recall_passes(asked, record) and allows(state, record))
    if served:
        assert recall_passes(asked, record)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[engagement]\nthreshold = 2\n', "from 0 to 1"),
        ('[engagement]\nmood = "x"\n', "unknown key `mood`"),
        ('[[engagement.rules]]\ndomain = "work"\n', "needs a condition"),
        ('[[engagement.rules]]\ndirectory = "/w"\n', "what it implies"),
        ('[[engagement.rules]]\ndirectory = "/w"\ndomain = "office"\n', "work\\\" or \\\"personal"),
        ('[[engagement.rules]]\ndirectory = "/w"\nproject = 3\n', "non-empty string"),
        ('[[engagement.rules]]\ndirectory = "/w"\nproject = "p"\nextra = "x"\n', "unknown key `extra`"),
    ],
)
def test_malformed_entry_rules_in_resident_toml_are_a_config_error_naming_the_fix(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "resident.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=says):
        load_config(path)


def test_no_engagement_table_means_the_defaults() -> None:
    assert parse_engagement(None, "resident.toml") == EngagementConfig()
