"""A newcomer's first hour, replayed: each thing that misled a new user is a test here.

(The README tour is checked in `tests/test_readme.py`, `replication sync` without a Realm in
`tests/test_cli_replication.py`, and `resident run examples/two-members.toml` in
`tests/test_sessions_plan.py`.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from resident import Runtime
from resident.coordination.tokens import GRANT_TOKEN_ENV
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.store.home import CONFIG_FILE
from tests.cli_helpers import expect_error, expect_ok, invoke, run_process

LONG_TASK = "migrate the staging database before the deploy and then verify every service answers its health check"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    expect_ok(invoke(path, "memory", "enable"))
    return path


def test_memory_enable_on_a_folder_that_does_not_exist_makes_a_whole_home(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    expect_ok(invoke(home, "memory", "enable"))
    assert (home / CONFIG_FILE).is_file(), "the home has the resident.toml `init` would write"
    assert (home / CONFIG_FILE).stat().st_mode & 0o777 == 0o600
    status = expect_ok(invoke(home, "status")).stdout
    assert "memory   on" in status
    assert "kept" in expect_ok(invoke(home, "init")).stdout, "init finds the home complete and changes nothing"


def test_an_owner_only_refusal_is_a_whole_sentence_that_says_what_to_do(home: Path) -> None:
    with Runtime.open(home, realm="none") as rt:
        grant = rt.coordinator.issue_grant(actions={"remember", "recall"}, scopes={"AGENT_CORE"})
        token = dispatch_session(host_context(rt), "notes", "deven", role="implement", parent_grant=grant,
                                        actions={"remember"}, scopes={"AGENT_CORE"}).token
    message = expect_error(invoke(home, "memory", "disable", env={GRANT_TOKEN_ENV: token}), "OwnerOnlyAction")
    assert not message.endswith("cannot"), message
    assert message.endswith("run it as the owner, without the member's grant token"), message


def test_progress_on_an_80_column_pipe_names_every_member(home: Path) -> None:
    with Runtime.open(home, realm="none") as rt:
        grant = rt.coordinator.issue_grant(actions={"remember", "recall"}, scopes={"AGENT_CORE"})
        for member in ("deven", "alice"):
            dispatch_session(host_context(rt), LONG_TASK, member, role="implement", parent_grant=grant,
                                    actions={"remember"}, scopes={"AGENT_CORE"})
    # A real process writing to a pipe: rich lays the table out for 80 columns.
    out = expect_ok(run_process(home, "progress", env={"COLUMNS": "80"})).stdout
    assert max(len(line) for line in out.splitlines()) <= 80
    rows = [line for line in out.splitlines() if line.startswith("│") and line.split("│")[1].strip()]
    assert [line.split("│")[1].strip() for line in rows] == ["samuel", "deven", "alice", "oliver", "victor"]
    assert "health check" in out, "the task wraps instead of pushing the member out"


def test_memory_show_of_a_retracted_record_says_when_by_whom_and_why(home: Path) -> None:
    record_id = expect_ok(invoke(home, "remember", "deven", "the deploy order is wrong")).stdout.split()[0]
    expect_ok(invoke(home, "memory", "forget", record_id, "--as", "deven", "--reason", "superseded by the runbook"))
    shown = expect_ok(invoke(home, "memory", "show", record_id, "--as", "deven")).stdout
    retracted = next(line for line in shown.splitlines() if line.startswith("retracted "))
    assert retracted.endswith("by deven: superseded by the runbook"), retracted
    assert " UTC " in retracted, "the time it was retracted"


def test_recall_while_memory_is_off_does_not_say_something_was_stored(home: Path) -> None:
    expect_ok(invoke(home, "memory", "disable"))
    message = expect_error(invoke(home, "recall", "deven", "deploy order"), "MemoryDisabled")
    assert "was stored" not in message
    assert "resident memory enable" in message
