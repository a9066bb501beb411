"""Dispatched executions run as member sessions in the background: within `[sessions] max_running`, each in
its own process, ended with the harness's exit status, and surviving a `kill -9` of the process that
dispatched them and of `resident up` (real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from resident import Runtime
from resident.runtime.runtime import host_context
from resident.store.tables import SESSIONS
from tests.api_helpers import UpProcess
from tests.cli_helpers import expect_ok, run_process
from tests.execution_helpers import HeldHarness, with_max_running

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


def _home(tmp_path: Path, limit: int = 2) -> Path:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
    with_max_running(home, limit)
    return home


def _repo(tmp_path: Path, name: str) -> Path:
    repo = tmp_path / name
    repo.mkdir()
    (repo / "README.md").write_text("a repository\n")
    return repo


def test_executions_run_in_the_background_one_at_a_time_within_the_limit(tmp_path: Path) -> None:
    home = _home(tmp_path, limit=1)
    first, second = HeldHarness(tmp_path / "fifos", "first"), HeldHarness(tmp_path / "fifos", "second")
    repo_a, repo_b = _repo(tmp_path, "a"), _repo(tmp_path, "b")
    with Runtime.open(home, realm="none") as rt:
        one = rt.coordinator.dispatch("deven", "first", harness="command", command=first.command,
                                      directory=str(repo_a))
        two = rt.coordinator.dispatch("alice", "second", harness="command", command=second.command,
                                      directory=str(repo_b))
        first.started()
        # One runs; the other waits for the slot, with no session yet.
        assert rt.coordinator.execution(two.id).session == ""
        assert (repo_a / "AGENTS.md").exists()
        first.go(0)
        done = rt.coordinator.wait(one.id, timeout=60)
        second.started()
        second.go(4)
        failed = rt.coordinator.wait(two.id, timeout=60)
        with host_context(rt).store.reader() as reader:
            session_one = reader.get(SESSIONS, done.execution.session)
            session_two = reader.get(SESSIONS, failed.execution.session)
    assert (done.state, done.exit_code) == ("succeeded", 0)
    assert (failed.state, failed.exit_code) == ("failed", 4)
    assert "exit status 4" in failed.summary
    assert session_one is not None
    assert session_two is not None
    assert session_one.ended_at is not None
    assert session_two.started_at >= session_one.ended_at
    # The projection is gone from both repositories, the harness's own work stays.
    assert not (repo_a / "AGENTS.md").exists()
    assert (repo_b / "harness-output.txt").read_text() == "the held harness ran here"


def test_an_execution_survives_kill_9_of_the_process_that_dispatched_it(tmp_path: Path) -> None:
    home = _home(tmp_path)
    held = HeldHarness(tmp_path / "fifos", "held")
    repo = _repo(tmp_path, "repo")
    dispatcher = subprocess.Popen(
        [sys.executable, "-m", "tests.dispatcher_child", str(home), str(repo), *held.command],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=Path(__file__).parent.parent,
    )
    try:
        assert dispatcher.stdout is not None
        execution_id = dispatcher.stdout.readline().decode().strip()
        held.started()
    finally:
        dispatcher.kill()
        dispatcher.wait(30)
        for pipe in (dispatcher.stdin, dispatcher.stdout):
            if pipe is not None:
                pipe.close()
    # The harness outlived its dispatcher: it ends now, and the next runtime of the home ends its session.
    held.go(5)
    with Runtime.open(home, realm="none") as rt:
        report = rt.coordinator.wait(execution_id, timeout=60)
    assert (report.state, report.exit_code) == ("failed", 5)
    assert report.session is not None
    assert report.session.state == "recovered"
    assert (repo / "harness-output.txt").exists()
    assert not (repo / "AGENTS.md").exists()


def test_an_execution_survives_kill_9_of_resident_up_and_the_next_up_adopts_it(tmp_path: Path) -> None:
    home = _home(tmp_path)
    held = HeldHarness(tmp_path / "fifos", "held")
    repo = _repo(tmp_path, "repo")
    up = UpProcess(home)
    up.start()
    try:
        dispatched = expect_ok(run_process(
            home, "dispatch", "deven", "--task", "run the held harness", "--harness", "command", "--dir", str(repo),
            "--", *held.command,
        ))
        execution_id = dispatched.stdout.strip()
        held.started()
    finally:
        up.kill()
    # The harness still runs; a new `resident up` adopts it (it is not its child), then it ends.
    with UpProcess(home) as again:
        listed = expect_ok(run_process(home, "executions", "--state", "running"))
        assert execution_id in listed.stdout
        held.go(0)
        awaited = expect_ok(run_process(home, "await", execution_id, "--timeout", "60"))
        assert "exit status: 0" in awaited.stdout
        assert "succeeded" in awaited.stdout
        del again
    assert not (repo / "AGENTS.md").exists()


def test_a_background_harness_under_up_calls_back_with_its_grant_and_await_shows_the_write(tmp_path: Path) -> None:
    home = _home(tmp_path)
    repo = _repo(tmp_path, "repo")
    remember = (sys.executable, "-m", "resident.cli", "remember", "deven", "the background harness called back")
    with UpProcess(home):
        execution_id = expect_ok(run_process(
            home, "dispatch", "deven", "--task", "write one note", "--harness", "command", "--dir", str(repo),
            "--", *remember,
        )).stdout.strip()
        awaited = expect_ok(run_process(home, "await", execution_id, "--timeout", "60", "--json"))
    report = json.loads(awaited.stdout)
    assert report["state"] == "succeeded"
    assert report["exit_code"] == 0
    assert [r["summary"] for r in report["records"]] == ["the background harness called back"]
