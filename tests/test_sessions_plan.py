"""Plans of real commands: a task names a harness and a command, and `resident run` plays it as a member
session; the example plan runs two members through the command harness on a scratch repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from resident import Runtime
from resident.config import DEFAULT_TEAM
from resident.coordination.plan import parse_plan, render_plan
from resident.errors import PlanInvalid
from resident.runner.run import RunOptions, run

MEMBERS = [name for name, _ in DEFAULT_TEAM]
EXAMPLE = Path(__file__).parents[1] / "examples" / "two-members.toml"

WORK = """
name = "work"

[[tasks]]
id = "deven-fix"
member = "deven"
harness = "command"
dir = "{scratch}"
text = "fix it"
command = ["{python}", "-c", "print('fixed')"]

[[tasks]]
id = "alice-review"
member = "alice"
role = "review"
harness = "claude-code"
steps = [{ do = "wait-for", task = "deven-fix" }]
"""


def parse(text: str):
    return parse_plan(text, "plan.toml", members=MEMBERS, coordinator="samuel")


def test_a_task_may_name_a_harness_a_command_a_directory_and_its_text():
    plan = parse(WORK)
    fix, review = plan.tasks
    assert (fix.harness, fix.command, fix.dir, fix.task) == (
        "command", ("{python}", "-c", "print('fixed')"), "{scratch}", "fix it"
    )
    assert fix.steps == ()
    assert (review.harness, review.command, review.task) == ("claude-code", (), "alice-review")
    assert parse(render_plan(plan)) == plan


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('harness = "command"', 'harness = "cursor"'), "unknown harness 'cursor'"),
        (('command = ["{python}", "-c", "print(\'fixed\')"]', 'command = "make"'), "`command` is a list"),
        (('command = ["{python}", "-c", "print(\'fixed\')"]', 'command = []'), "needs the `command`"),
        (('harness = "claude-code"\nsteps = [{ do = "wait-for", task = "deven-fix" }]', 'steps = []'),
         "needs a non-empty `steps`"),
        (('role = "review"', 'role = "review"\nshell = "bash"'), "unknown key `shell`"),
    ],
)
def test_a_bad_harness_task_is_refused_naming_what_is_wrong(change: tuple[str, str], message: str):
    with pytest.raises(PlanInvalid, match=message):
        parse(WORK.replace(*change, 1))


def test_command_and_dir_belong_to_a_task_that_names_a_harness():
    text = WORK.replace('harness = "claude-code"\n', 'command = ["make"]\n')
    with pytest.raises(PlanInvalid, match="`command` belongs to a task that names a `harness`"):
        parse(text)


def test_the_example_plan_runs_two_members_through_the_command_harness_on_a_scratch_repository(
    tmp_path: Path, private_tmp: Path
):
    home = tmp_path / "home"
    report = run(RunOptions(plan=EXAMPLE, realm="none", home=str(home), live=False), Console(file=None, quiet=True))
    assert report.ok, report.failures()
    assert {t.task: t.state for t in report.metrics.tasks.values()} == {
        "deven-greet": "succeeded", "alice-check": "succeeded"
    }
    work = report.metrics.work
    assert work is not None
    assert sorted(p.name for p in (work / "repo").iterdir() if p.name != ".git") == ["greet.py"], (
        "the work stays; nothing of the members is left in the repository"
    )
    with Runtime.open(home, realm="none") as runtime:
        executions = {e.task: e for e in runtime.coordinator.executions()}
        for member, task in (("deven", "Write greet.py"), ("alice", "Check that greet")):
            (session,) = runtime.sessions.list(member=member)
            execution = next(e for text, e in executions.items() if text.startswith(task))
            assert (execution.session, execution.outcome) == (session.id, "succeeded")
            turns = runtime.sessions.show(session.id).turns
            assert turns[0].text.startswith(task), "the member read its task from the projected AGENTS.md"
            assert session.directory == str((work / "repo").resolve())
        # Deven's command called back through the run's API (`resident remember` with its grant token).
        hits = runtime.member("deven").recall("greet.py greet(name) returns", k=5)
        learned = next(hit for hit in hits if hit.body.startswith("greet.py in the scratch repository"))
        record = runtime.member("deven").get(learned.id)
        assert (record.delegated, record.author) == (True, "deven")
    # The run counted that callback's write and checked it: its invariant is not over zero writes.
    assert report.metrics.session_writes == {learned.id}
    assert report.metrics.writes == 1
    kept = next(i for i in report.invariants if i.name == "no acknowledged write lost")
    assert kept.ok
    assert kept.detail.startswith("1 acknowledged writes (0 by the plan's steps, 1 by the members' own sessions)")


def test_a_harness_task_whose_command_fails_fails_its_task_and_execution(tmp_path: Path, private_tmp: Path):
    plan = tmp_path / "fails.toml"
    plan.write_text(WORK.replace("print('fixed')", "import sys; sys.exit(4)").split("[[tasks]]\nid = \"alice")[0])
    home = tmp_path / "home"
    report = run(RunOptions(plan=plan, realm="none", home=str(home), live=False), Console(file=None, quiet=True))
    assert not report.ok
    (task,) = report.metrics.tasks.values()
    assert task.state == "failed"
    assert "exited with status 4" in task.error
    with Runtime.open(home, realm="none") as runtime:
        (execution,) = runtime.coordinator.executions()
        (session,) = runtime.sessions.list()
    assert (execution.outcome, execution.session, session.outcome) == ("failed", session.id, "failed")
