"""What the README promises that a test can hold: the two commands, the commands it tours, no outside paths."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from resident.cli.main import COMMANDS
from tests.cli_helpers import run_process

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.timeout(10)


def _shell_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S)]


def test_the_readme_starts_with_the_two_commands_and_ci_runs_the_second_verbatim() -> None:
    first, second = _shell_blocks(README)[:2]
    assert first.endswith("resident run"), "the first command must install and run `resident run`"
    assert "pytest" in second
    assert README.index(first) < README.index("## "), "the two commands come before any section"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert second in ci, ".ci/run must call exactly the README's test command"


def test_every_command_the_readme_tours_exists() -> None:
    tour = README[README.index("## A tour of the command") : README.index("## The Python API")]
    rows = [row for row in tour.splitlines() if row.startswith("| `")]
    # The first column names commands with their arguments (`\\|` separates choices inside a cell);
    # the first word of each code span is a command.
    named = {span.split()[0] for row in rows for span in re.findall(r"`([^`]+)`", re.split(r"(?<!\\)\|", row)[1])}
    assert len(rows) >= 10
    assert {"run", "up", "session", "knowledge"} <= named
    assert named <= set(COMMANDS), f"the README tours commands that do not exist: {sorted(named - set(COMMANDS))}"


def test_nothing_in_the_readme_or_docs_points_outside_the_repository() -> None:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "RESULTS.md"]:
        text = path.read_text(encoding="utf-8")
        assert "../shared" not in text, f"{path.name} points outside the repository"
        assert not re.search(r"(?<![\w.])/(work|home|Users)/\w+/", text.replace("/work/acme", "")), (
            f"{path.name} holds an absolute path of a machine"
        )


@pytest.mark.timeout(120)  # seven real `resident` processes
def test_the_tour_starts_with_what_the_first_command_installed_and_runs_in_order(tmp_path: Path) -> None:
    tour = _shell_blocks(README)[2]
    lines = [line.split("#")[0].strip() for line in tour.splitlines()]
    assert lines[0] == ". .venv/bin/activate", "the first command installs `resident` into .venv/bin only"
    record_id = ""
    for line in lines[1:]:
        words = shlex.split(line)
        assert words[0] == "resident", line
        arguments = [record_id if word == "ID" else word for word in words[1:]]
        outcome = run_process(tmp_path / "home", *arguments)
        assert outcome.code == 0, outcome.describe()
        if arguments[0] == "remember":
            record_id = outcome.stdout.split()[0]
    assert record_id.startswith("mem_")
