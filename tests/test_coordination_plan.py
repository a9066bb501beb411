"""Run plans are checked whole before anything runs; every error names the file, task and step."""

from __future__ import annotations

import pytest

from resident.config import DEFAULT_TEAM
from resident.coordination.default_plan import default_plan
from resident.coordination.plan import check_plan, parse_plan, render_plan
from resident.errors import ConfigError, PlanInvalid

MEMBERS = [name for name, _ in DEFAULT_TEAM]

VALID = """
name = "small"

[[tasks]]
id = "deven-build"
member = "deven"
role = "implement"
steps = [
  { do = "remember", text = "build {i} passed", repeat = 3, as = "build" },
  { do = "recall", query = "build passed", expect = "build" },
  { do = "supersede", ref = "build", text = "build was rolled back" },
]

[[tasks]]
id = "samuel-ops"
member = "samuel"
role = "coordinate"
steps = [
  { do = "wait-for", task = "deven-build" },
  { do = "crash", actor = "substrate" },
]
"""


def parse(text: str):
    return parse_plan(text, "plan.toml", members=MEMBERS, coordinator="samuel")


def test_a_valid_plan_parses_into_tasks_and_steps():
    plan = parse(VALID)
    assert plan.name == "small"
    assert [t.id for t in plan.tasks] == ["deven-build", "samuel-ops"]
    assert plan.tasks[0].steps[0].repeat == 3
    assert plan.writes == 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("member = \"deven\"", "member = \"dave\""), "unknown member 'dave'"),
        (("do = \"recall\"", "do = \"recal\""), "unknown step 'recal'"),
        (("expect = \"build\"", "expect = \"nothing\""), "'nothing' is not defined"),
        (("repeat = 3", "repeat = 3, colour = \"red\""), "has no `colour`"),
        (("task = \"deven-build\"", "task = \"nope\""), "unknown task 'nope'"),
        (("role = \"implement\"", "role = \"wizard\""), "unknown role 'wizard'"),
        (("id = \"samuel-ops\"", "id = \"deven-build\""), "used twice"),
        (("repeat = 3", "repeat = 0"), "repeat must be 1..100000"),
        (("text = \"build was rolled back\"", "text = \"\""), "needs `text`"),
    ],
)
def test_a_bad_plan_is_refused_naming_what_is_wrong(change, message):
    old, new = change
    with pytest.raises(PlanInvalid, match=message):
        parse(VALID.replace(old, new, 1))


def test_a_toml_syntax_error_names_the_line():
    with pytest.raises(PlanInvalid, match="line 3"):
        parse('name = "x"\n\n[[tasks]\n')


def test_only_the_coordinator_drives_the_run():
    text = VALID.replace('{ do = "supersede"', '{ do = "crash", actor = "writer" },\n  { do = "supersede"')
    with pytest.raises(PlanInvalid, match="only the coordinator"):
        parse(text)


def test_plan_errors_are_config_errors():
    with pytest.raises(ConfigError):
        parse("tasks = 3")


@pytest.mark.parametrize("members", [2, 3, 5])
def test_the_default_plan_is_valid_and_round_trips_through_toml(members):
    chosen = list(DEFAULT_TEAM[:members])
    plan = default_plan(chosen, "samuel", writes=9)
    check_plan(plan, members=MEMBERS, coordinator="samuel")
    again = parse(render_plan(plan))
    assert [t.steps for t in again.tasks] == [t.steps for t in plan.tasks]
    assert plan.writes >= 9 * (members - 1)
