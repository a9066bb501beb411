"""`resident session …` as real processes: a fake harness that plants secrets, member callbacks while
the home is free, Ctrl-C, SIGTERM and kill -9 all ending in recovery, and bad input on every command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from resident import Runtime
from resident.children.orphans import wait_gone
from resident.coordination.tokens import GRANT_TOKEN_ENV
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.store.tables import EXECUTIONS
from tests.cli_helpers import expect_error, expect_json, invoke, run_process
from tests.session_fixtures import planted_secrets
from tests.session_helpers import fake, files_holding, planted_file, requires_sandbox, tree

# Every start here goes through `resident session start`, which runs the harness in bubblewrap.
pytestmark = requires_sandbox

READY_TIMEOUT = 60.0
ORIGINAL = "# Payments\n\nRun `make test` before committing.\n"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as runtime:
        runtime.memory.enable()
        runtime.member("deven").remember("the payments retry test flaked because it measured wall time")
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "AGENTS.md").write_text(ORIGINAL)
    return root


def _environment(home: Path) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("RESIDENT_DEBUG", GRANT_TOKEN_ENV)}
    return {**environment, "RESIDENT_HOME": str(home), "PYTHONIOENCODING": "utf-8"}


@contextmanager
def session_process(home: Path, repo: Path, *options: str) -> Iterator[subprocess.Popen[str]]:
    """`resident session start deven` running a fake harness that waits; yielded once the harness is up."""
    process = subprocess.Popen(
        [sys.executable, "-m", "resident.cli", "session", "start", "deven", "--harness", "command",
         "--dir", str(repo), "--task", "fix the retry test", "--", *fake("--wait", *options)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_environment(home),
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not (repo / "ready").exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the harness never reported ready"
            time.sleep(0.02)
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_cli_runs_a_harness_that_plants_secrets_none_reach_the_store_and_callbacks_work(
    home: Path, repo: Path, tmp_path: Path
):
    secrets = planted_secrets()
    before = tree(repo)
    outcome = invoke(
        home, "session", "start", "deven", "--harness", "claude-code", "--dir", str(repo), "--task",
        "fix the payments retry test", "--json", "--",
        *fake("--as", "claude-code", "--secrets", str(planted_file(tmp_path, secrets)), "--call-back"),
    )
    assert outcome.code == 0, outcome.describe()
    session = json.loads(outcome.stdout)
    assert (session["state"], session["outcome"], session["turns"]) == ("recovered", "succeeded", 5)
    # While the harness ran, the session served the home: the member's own `resident recall` ran as deven.
    callback = json.loads((repo / "callback.json").read_text())
    assert callback["member"] == "deven"
    (repo / "callback.json").unlink()
    assert tree(repo) == before
    shown = expect_json(invoke(home, "session", "show", session["id"], "--json"))
    text = json.dumps(shown)
    assert [name for name, value in secrets.items() if value in text or value.split("\n")[0] in text] == []
    assert {"openai-key", "github-token", "private-key", "jwt", "aws-access-key"} <= {
        kind for kind, _ in shown["session"]["redactions"]
    }
    assert files_holding(home / "store.1", secrets.values()) == []
    # The harness's own copy of the transcript, in deven's Claude Code home, is redacted in place too
    # (`[sessions] harness_transcripts = "redact"`, the default).
    assert files_holding(home / "harness" / "deven" / "claude-code", secrets.values()) == []


@pytest.mark.slow
def test_the_members_calls_at_the_same_moment_all_reach_the_runtime_the_session_serves(home: Path, repo: Path):
    outcome = run_process(home, "session", "start", "deven", "--harness", "command", "--dir", str(repo), "--json",
                          "--", *fake("--call-back-together", "4"))
    assert outcome.code == 0, outcome.describe()
    results = json.loads((repo / "callbacks.json").read_text())
    assert [r["code"] for r in results] == [0, 0, 0, 0], results
    written = {json.loads(r["out"])["id"] for r in results}
    assert len(written) == 4
    with Runtime.open(home) as rt:
        assert {rt.member("deven").get(record_id).delegated for record_id in written} == {True}
    assert not (home / "api.json").exists(), "the session's API went when the session ended"


@pytest.mark.slow
def test_with_json_the_harness_speaks_on_stderr_and_stdout_is_one_json_document(home: Path, repo: Path):
    outcome = run_process(home, "session", "start", "deven", "--harness", "command", "--dir", str(repo), "--json",
                          "--", *fake("--say", "hello from the harness"))
    assert outcome.code == 0, outcome.describe()
    assert json.loads(outcome.stdout)["outcome"] == "succeeded"
    assert outcome.stderr == "hello from the harness\n"


@pytest.mark.slow
def test_progress_shows_a_running_session_live_and_sigterm_ends_it_in_recovery(home: Path, repo: Path):
    with session_process(home, repo) as process:
        progress = expect_json(run_process(home, "progress", "--json"))
        (running,) = progress["sessions"]
        assert (running["member"], running["harness"], running["task"]) == ("deven", "command", "fix the retry test")
        assert "You are deven" in (repo / "AGENTS.md").read_text()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=READY_TIMEOUT)
    assert process.returncode == 143, stderr
    assert stderr.splitlines()[-1] == "error: terminated by SIGTERM"
    assert (repo / "AGENTS.md").read_text() == ORIGINAL
    listed = expect_json(run_process(home, "session", "list", "--json"))["sessions"]
    assert [(s["state"], s["outcome"]) for s in listed] == [("recovered", "cancelled")]


def test_ctrl_c_stops_the_harness_through_its_guard_and_the_session_is_still_recovered(home: Path, repo: Path):
    with session_process(home, repo) as process:
        harness = int((repo / "ready").read_text())
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=READY_TIMEOUT)
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == "error: interrupted"
    assert wait_gone(harness, 15.0)
    assert (repo / "AGENTS.md").read_text() == ORIGINAL
    with Runtime.open(home, realm="none") as runtime:
        (session,) = runtime.sessions.list()
        (execution,) = runtime.coordinator.executions()
    assert (session.outcome, execution.outcome, execution.session) == ("cancelled", "cancelled", session.id)
    assert session.turns == 5, "what the harness wrote before it was stopped is recovered"


@pytest.mark.slow
def test_a_session_whose_process_was_killed_is_recovered_by_the_next_start(home: Path, repo: Path, tmp_path: Path):
    with session_process(home, repo) as process:
        harness = int((repo / "ready").read_text())
        process.kill()
        process.wait()
        assert wait_gone(harness, 15.0), "the harness outlived the kill -9 of its session"
    assert "You are deven" in (repo / "AGENTS.md").read_text(), "nothing could restore it yet"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outcome = run_process(home, "session", "start", "alice", "--harness", "command", "--dir", str(elsewhere), "--",
                          *fake())
    assert outcome.code == 0, outcome.describe()
    assert "resident: recovered session" in outcome.stderr
    assert "died" in outcome.stderr
    assert (repo / "AGENTS.md").read_text() == ORIGINAL
    with Runtime.open(home, realm="none") as runtime:
        deven = runtime.sessions.list(member="deven")
        with runtime._internal.store.reader() as reader:
            execution = reader.get(EXECUTIONS, deven[0].execution)
    assert [(s.state, s.outcome) for s in deven] == [("recovered", "failed")]
    assert execution is not None
    assert execution.outcome == "failed"
    assert "died" in execution.error


def test_a_member_session_sees_only_its_own_sessions_and_cannot_start_import_or_curate(home: Path, repo: Path):
    with Runtime.open(home, realm="none") as runtime:
        sessions = runtime.sessions
        mine = sessions.run(sessions.start("deven", harness="command", command=fake(), directory=str(repo)))
        theirs = sessions.run(sessions.start("alice", harness="command", command=fake(), directory=str(repo)))
        grant = runtime.coordinator.issue_grant(actions={"recall"})
        token = dispatch_session(host_context(runtime), "look back", "deven", role="review", parent_grant=grant,
                                             actions={"recall"}).token
    assert mine is not None
    assert theirs is not None
    as_deven: dict[str, str | None] = {GRANT_TOKEN_ENV: token}
    listed = expect_json(invoke(home, "session", "list", "--json", env=as_deven))
    assert [s["id"] for s in listed["sessions"]] == [mine.id]
    expect_json(invoke(home, "session", "show", mine.id, "--json", env=as_deven))
    expect_error(invoke(home, "session", "show", theirs.id, env=as_deven), "UnknownSession")
    for command in (("session", "start", "deven", "--harness", "command", "--", "true"),
                    ("session", "import", "x", "--member", "deven", "--harness", "codex"),
                    ("session", "recover"), ("curate", "deven")):
        expect_error(invoke(home, *command, env=as_deven), "OwnerOnlyAction")


@pytest.mark.parametrize(
    ("args", "error", "code"),
    [
        (("session", "show", "ses_nope"), "UnknownSession", 1),
        (("session", "show", "ses_nope", "--json"), "UnknownSession", 1),
        (("session", "start", "deven", "--harness", "cursor", "--", "true"), "UsageError", 2),
        (("session", "start", "deven", "--harness", "command", "--json"), "InvalidInput", 1),
        (("session", "start", "nobody", "--harness", "command", "--", "true"), "UnknownMember", 1),
        (("session", "start", "deven", "--harness", "pi", "--", "no-such-pi-binary"), "HarnessNotFound", 1),
        (("session", "list", "--state", "lost"), "UsageError", 2),
        (("session", "candidates", "--harness", "command", "--json"), "InvalidInput", 1),
        (("session", "import", "abc", "--member", "deven", "--harness", "codex", "--path", "/nonexistent"),
         "InvalidInput", 1),
        (("curate", "deven", "--text", "a memory"), "UsageError", 2),
        (("curate", "deven", "--admit", "not-an-excerpt"), "InvalidInput", 1),
        (("curate", "nobody"), "UnknownMember", 1),
    ],
)
def test_bad_input_on_session_commands_is_one_typed_line_and_writes_nothing(
    home: Path, args: tuple[str, ...], error: str, code: int
):
    expect_error(invoke(home, *args), error, code=code)
    with Runtime.open(home, realm="none") as runtime:
        assert runtime.sessions.list() == []
        assert runtime.coordinator.executions() == []


def test_session_show_prints_stored_text_escaped_never_obeyed(home: Path, tmp_path: Path):
    history = tmp_path / "history"
    history.mkdir()
    hostile = "done \x1b]0;pwned\x07\x1b[2J and \u202egnp.exe"
    (history / "hostile.jsonl").write_text(json.dumps({"role": "assistant", "text": hostile}) + "\n")
    imported = expect_json(invoke(home, "session", "import", "hostile", "--member", "deven", "--harness", "command",
                                  "--path", str(history), "--json"))
    (session,) = imported["imported"]
    shown = invoke(home, "session", "show", session["id"])
    assert shown.code == 0, shown.describe()
    assert "\x1b" not in shown.stdout
    assert "\u202e" not in shown.stdout
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in shown.stdout
