"""`resident knowledge …`, `resident session …`, `resident curate` and `resident mcp serve` through a running
`resident up`: the same bytes and exit statuses as in-process, the same typed refusals, and a member
session's harness calling back into the runtime that is up.

Two homes are prepared the same way; every command runs in-process on one and through a real
`resident up` on the other, in the same order, and each pair of outcomes must match byte for byte
once what the two homes name differently (new ids, times, their own folders) is masked.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from resident import Runtime
from resident.api.inprocess import InProcess
from resident.api.mcp import CONTEXT_TOOL
from resident.children.orphans import wait_gone
from resident.coordination.tokens import GRANT_TOKEN_ENV
from resident.messages.knowledge_calls import Ingest
from resident.operations import knowledge as knowledge_ops
from resident.runtime.coordination import dispatch_session
from resident.runtime.knowledge.banks import INGEST_PROGRESS
from resident.runtime.runtime import host_context
from tests.api_helpers import UpProcess
from tests.cli_helpers import Outcome, expect_error, expect_json, expect_ok, invoke, run_process
from tests.evolution_helpers import session
from tests.knowledge_helpers import candidate, enable_knowledge, evidence_chain, owner_grant, work_item, write_docs
from tests.session_fixtures import FIXTURES, fixture_path, load, planted_secrets
from tests.session_helpers import fake, requires_sandbox

_ID = re.compile(r"\b[a-z]+_[0-9a-f]{28}\b")
_TIMES = re.compile(r'"[a-z_]*(_at|seconds)": [0-9.e+-]+|in [0-9.]+ s\b|\d{4}-\d\d-\d\d \d\d:\d\d')
READY_TIMEOUT = 60.0
CODEX_SESSION = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"


@dataclass(frozen=True)
class Home:
    home: Path
    root: Path
    shown: str  # deven's recovered session (its transcript stored)
    alices: str  # alice's recovered session
    candidate: str  # a knowledge candidate whose evidence is incomplete
    excerpt: str  # an excerpt of deven's experience
    token: str  # a running session of deven's


def shared_files(root: Path) -> dict[str, Path]:
    """What both homes' commands name: documents, a repository, a legacy file, a Codex history."""
    docs = write_docs(root / "docs")
    repo = root / "repo"
    repo.mkdir()
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    legacy = root / "old.jsonl"
    legacy.write_text(json.dumps({"project": "p", "repository": "r", "kind": "fact", "title": "Old",
                                  "body": "from before"}) + "\n", encoding="utf-8")
    bad = root / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    history = root / "codex-history"
    source = fixture_path("codex")
    target = history / source.relative_to(FIXTURES / "codex")
    target.parent.mkdir(parents=True)
    target.write_bytes(load("codex", planted_secrets()))
    return {"docs": docs, "repo": repo, "legacy": legacy, "bad": bad, "history": history}


def prepare(root: Path, files: dict[str, Path]) -> Home:
    """A home with knowledge on: a repository, a verified entry and a candidate, two recovered sessions."""
    home = enable_knowledge(root / "home")
    work = root / "work"
    work.mkdir()
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        rt.knowledge.register_repository("resident", files["repo"], members=["deven", "alice"])
        evidence_chain(rt, work=work_item("resident"), proposal=candidate("One writer per worktree"))
        unfinished = evidence_chain(rt, accept=False, proposal=candidate("Not yet accepted"))
        assert unfinished.entry is not None
        recovered = []
        for member in ("deven", "alice"):
            started = rt.sessions.start(member, harness="command", command=fake("--say", "done"),
                                        directory=str(work), task=f"{member}'s release notes")
            ended = rt.sessions.run(started, log=root / f"{member}.log")
            assert ended is not None
            recovered.append(ended.id)
        excerpt = rt.sessions.excerpts("deven")[0].id
        token = session(rt, "deven", "triage the queue").token
    return Home(home, root, recovered[0], recovered[1], unfinished.entry.id, excerpt, token)


def reads(at: Home, files: dict[str, Path]) -> list[tuple[str, ...]]:
    """Commands that change nothing: run on one home, in-process and then through `resident up`."""
    history = str(files["history"])
    context = ("knowledge", "context", "--member", "alice", "--project", "resident", "--repository", "resident")
    work = str(at.root / "work")
    return [
        ("knowledge", "repos", "list"), ("knowledge", "repos", "list", "--json"), ("knowledge", "banks", "list"),
        ("knowledge", "entries"), ("knowledge", "entries", "--state", "candidate", "--json"), (*context, "writer"),
        (*context, "--json"), ("session", "list"), ("session", "list", "--json"), ("session", "show", at.shown),
        ("session", "show", at.shown, "--json", "--limit", "2"), ("session", "show", at.shown, "--raw", "0"),
        ("session", "recover"), ("session", "recover", "--json"),
        ("session", "candidates", "--harness", "codex", "--path", history), ("curate", "deven"),
        ("curate", "deven", "--json", "--session", at.shown),
        # refusals, the same either way
        ("knowledge", "promote", at.candidate), ("knowledge", "promote", "kn_" + "0" * 28, "--json"),
        ("knowledge", "search", "nobank", "q"), ("knowledge", "search", "nobank", "   ", "--json"),
        ("knowledge", "ingest", "nobank", str(files["docs"])), ("knowledge", "banks", "create", "Bad Name"),
        ("knowledge", "context", "--member", "victor", "--project", "p", "--repository", "r"),
        ("knowledge", "import-legacy", str(files["bad"]), "--json"), ("knowledge", "import-legacy", "/dev/zero"),
        ("knowledge", "repos", "add", "gone", str(at.root / "missing")),
        ("session", "show", "ses_missing"), ("session", "show", at.shown, "--raw", "7", "--json"),
        ("session", "candidates", "--harness", "command"), ("session", "recover", "ses_missing", "--json"),
        ("session", "import", "x", "--member", "nobody", "--harness", "codex", "--path", history),
        ("curate", "nobody"), ("curate", "deven", "--text", "x"), ("curate", "deven", "--admit", "not-an-excerpt"),
        ("session", "start", "nobody", "--harness", "command", "--dir", work, "--", "true"),
        ("session", "start", "deven", "--harness", "command", "--dir", str(at.root / "missing"), "--", "true"),
        ("session", "start", "deven", "--harness", "command", "--dir", work, "--json", "--", "no-such-harness-here"),
    ]


def changes(at: Home, files: dict[str, Path]) -> list[tuple[str, ...]]:
    """Commands that change the home: run on two homes prepared alike, one in-process, one through `resident up`."""
    docs, repo, history = str(files["docs"]), str(files["repo"]), str(files["history"])
    return [
        ("knowledge", "banks", "create", "handbook", "--owner", "member:deven", "--json"),
        ("knowledge", "banks", "create", "handbook", "--owner", "member:deven"), ("knowledge", "banks", "list"),
        ("knowledge", "ingest", "handbook", docs), ("knowledge", "ingest", "handbook", docs, "--json"),
        ("knowledge", "ingest", "handbook", str(at.root / "missing")),
        ("knowledge", "search", "handbook", "rollback"), ("knowledge", "search", "handbook", "迁移", "--json"),
        ("knowledge", "search", "handbook", "deploy", "--state", "superseded"),
        ("knowledge", "search", "handbook", "   ", "--json"), ("knowledge", "reindex"),
        ("knowledge", "reindex", "--json"), ("knowledge", "repos", "add", "notes", repo, "--member", "alice"),
        ("knowledge", "import-legacy", str(files["legacy"]), "--json"),
        ("knowledge", "import-legacy", str(files["legacy"])),
        ("session", "import", CODEX_SESSION[:12], "--member", "deven", "--harness", "codex", "--path", history,
         "--json"),
        ("session", "import", CODEX_SESSION, "--member", "deven", "--harness", "codex", "--path", history),
        ("curate", "deven", "--admit", at.excerpt, "--summary", "what the session concluded"),
        ("curate", "deven", "--admit", at.excerpt, "--json"),
    ]


def member_reads(at: Home) -> list[tuple[str, ...]]:
    """What deven's session runs, its grant token in the environment."""
    return [
        ("session", "list"), ("session", "list", "--json"), ("session", "list", "--member", "alice", "--json"),
        ("session", "show", at.shown),
        ("session", "show", at.alices), ("session", "show", at.alices, "--raw", "0", "--json"),
        ("knowledge", "banks", "list"), ("curate", "deven"), ("session", "recover"),
    ]


def masked(outcome: Outcome, at: Home) -> tuple[int, str, str]:
    """The outcome with what two homes prepared alike name differently masked: ids, times, folders, digests."""

    def mask(text: str) -> str:
        text = text.replace(str(at.root), "<root>")
        text = re.sub(r'"(digest|stored)": ("[0-9a-f]+"|[0-9]+)', "<digest>", text)
        return _TIMES.sub("<time>", _ID.sub("<id>", text))

    return outcome.code, mask(outcome.stdout), mask(outcome.stderr)


def exact(outcome: Outcome) -> tuple[int, str, str]:
    return outcome.code, outcome.stdout, outcome.stderr


@dataclass
class Runs:
    local: list[Outcome]
    remote: list[Outcome]
    local_member: list[Outcome]
    remote_member: list[Outcome]
    local_changes: list[tuple[Outcome, Home]]
    remote_changes: list[tuple[Outcome, Home]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("routes")
    files = shared_files(root / "shared")
    served, alike = prepare(root / "served", files), prepare(root / "alike", files)
    as_deven: dict[str, str | None] = {GRANT_TOKEN_ENV: served.token}

    def read_all() -> tuple[list[Outcome], list[Outcome]]:
        owner = [invoke(served.home, *command) for command in reads(served, files)]
        return owner, [invoke(served.home, *command, env=as_deven) for command in member_reads(served)]

    local, local_member = read_all()
    local_changes = [(invoke(alike.home, *command), alike) for command in changes(alike, files)]
    with UpProcess(served.home):
        remote, remote_member = read_all()
        remote_changes = [(invoke(served.home, *command), served) for command in changes(served, files)]
    return Runs(local, remote, local_member, remote_member, local_changes, remote_changes)


def differences(pairs: list[tuple[tuple[int, str, str], tuple[int, str, str], Outcome, Outcome]]) -> str:
    return "\n".join(
        f"{mine.args}:\n  in-process {mine.describe()}\n  remote {theirs.describe()}"
        for left, right, mine, theirs in pairs
        if left != right
    )


@requires_sandbox
@pytest.mark.slow
def test_knowledge_session_and_curate_reads_and_refusals_are_the_same_bytes_through_a_running_api(
    runs: Runs,
) -> None:
    found = differences([(exact(a), exact(b), a, b) for a, b in zip(runs.local, runs.remote, strict=True)])
    assert not found, found
    remote = {outcome.args: outcome for outcome in runs.remote}
    # They said something: answers, and typed refusals with their exit statuses.
    assert "2 sessions" in expect_ok(remote[("session", "list")]).stdout
    assert "One writer per worktree" in expect_ok(remote[next(a for a in remote if "writer" in a)]).stdout
    expect_error(remote[("knowledge", "search", "nobank", "q")], "UnknownBank")
    expect_error(remote[("knowledge", "import-legacy", "/dev/zero")], "InvalidInput", naming=("regular file",))
    expect_error(remote[("session", "show", "ses_missing")], "UnknownSession")
    expect_error(remote[next(a for a in remote if a[:2] == ("knowledge", "promote"))], "PromotionRefused")
    starts = [outcome for outcome in runs.remote if outcome.args[:2] == ("session", "start")]
    expect_error(starts[0], "UnknownMember")
    expect_error(starts[1], "InvalidInput", naming=("not a folder",))
    expect_error(starts[2], "HarnessNotFound")


@pytest.mark.slow
def test_knowledge_session_and_curate_changes_say_the_same_through_a_running_api(runs: Runs) -> None:
    found = differences([
        (masked(a, here), masked(b, there), a, b)
        for (a, here), (b, there) in zip(runs.local_changes, runs.remote_changes, strict=True)
    ])
    assert not found, found
    remote = [outcome for outcome, _ in runs.remote_changes]

    def first(*prefix: str) -> Outcome:
        return next(outcome for outcome in remote if outcome.args[: len(prefix)] == prefix)

    assert "6 pages admitted" in expect_ok(first("knowledge", "ingest", "handbook")).stdout
    imported = expect_json(first("session", "import", CODEX_SESSION[:12]))
    assert [record["member"] for record in imported["imported"]] == ["deven"]
    assert "admitted" in expect_ok(first("curate", "deven", "--admit")).stdout
    expect_error(remote[-1], "InvalidInput", naming=("already",))


@pytest.mark.slow
def test_a_member_session_sees_only_its_own_sessions_through_a_running_api_as_in_process(runs: Runs) -> None:
    pairs = [(exact(a), exact(b), a, b) for a, b in zip(runs.local_member, runs.remote_member, strict=True)]
    assert not differences(pairs), differences(pairs)
    remote = {outcome.args[:3]: outcome for outcome in runs.remote_member}
    assert "1 sessions" in expect_ok(remote[("session", "list")]).stdout
    listed = expect_json(remote[("session", "list", "--json")])["sessions"]
    assert [found["member"] for found in listed] == ["deven"]
    assert expect_json(remote[("session", "list", "--member")]) == {"sessions": []}
    for outcome in [outcome for outcome in runs.remote_member if outcome.args[:2] == ("session", "show")][1:]:
        assert "UnknownSession" in outcome.stdout + outcome.stderr, outcome.describe()
    expect_error(remote[("knowledge", "banks", "list")], "OwnerOnlyAction")
    expect_error(remote[("curate", "deven")], "OwnerOnlyAction")
    expect_error(remote[("session", "recover")], "OwnerOnlyAction")


# -- a session started through a running runtime -----------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[UpProcess, Path]]:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        rt.member("deven").remember("the payments retry test flaked because it measured wall time")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "AGENTS.md").write_text("# Payments\n", encoding="utf-8")
    with UpProcess(home) as up:
        yield up, repo


def _environment(home: Path) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("RESIDENT_DEBUG", GRANT_TOKEN_ENV)}
    return {**environment, "RESIDENT_HOME": str(home), "PYTHONIOENCODING": "utf-8"}


def start_process(home: Path, repo: Path, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "resident.cli", "session", "start", "deven", "--harness", "command",
         "--dir", str(repo), "--task", "fix the retry test", "--json", "--", *fake(*options)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_environment(home),
    )


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the harness never reported ready"
        time.sleep(0.02)


@requires_sandbox
@pytest.mark.slow
def test_a_session_started_through_a_running_runtime_runs_here_and_its_member_calls_back_into_it(
    served: tuple[UpProcess, Path],
) -> None:
    up, repo = served
    process = start_process(up.home, repo, "--call-back", "--make", "fix.py")
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    record = json.loads(stdout)
    assert (record["member"], record["outcome"], record["state"]) == ("deven", "succeeded", "recovered")
    # The harness's own `resident recall`, with the session's grant token, was answered by the runtime that is
    # up (the home is that runtime's: the command could not have opened it itself).
    callback = json.loads((repo / "callback.json").read_text(encoding="utf-8"))
    assert (callback["member"], callback["query"], "error" in callback) == ("deven", "task", False), callback
    assert (repo / "fix.py").exists()
    assert (repo / "AGENTS.md").read_text(encoding="utf-8") == "# Payments\n"
    # The runtime stayed up throughout and holds the session.
    assert up.proc is not None
    assert up.proc.poll() is None
    shown = expect_json(run_process(up.home, "session", "show", record["id"], "--json"))
    assert shown["session"]["exit_code"] == 0


@requires_sandbox
@pytest.mark.slow
@pytest.mark.parametrize("how", ["interrupted", "killed"])
def test_a_session_whose_launcher_is_stopped_or_killed_ends_in_recovery_through_the_running_runtime(
    served: tuple[UpProcess, Path], how: str
) -> None:
    up, repo = served
    process = start_process(up.home, repo, "--wait")
    try:
        wait_for((repo / "ready").exists, process)
        harness = int((repo / "ready").read_text())
        if how == "interrupted":
            process.send_signal(signal.SIGINT)  # Ctrl-C: the harness is stopped, the session ended as interrupted
            process.communicate(timeout=60)
        else:
            process.kill()
            process.wait(timeout=30)
            assert wait_gone(harness, 30), "the harness outlived its launcher"
            # The runtime that started it sees that its launcher is gone, and recovers it.
            recovered = expect_json(run_process(up.home, "session", "recover", "--json"))["recovered"]
            assert [record["member"] for record in recovered] == ["deven"]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    [record] = expect_json(run_process(up.home, "session", "list", "--json"))["sessions"]
    assert record["state"] == "recovered"
    assert record["outcome"] == {"interrupted": "cancelled", "killed": "failed"}[how]
    assert {"interrupted": "interrupted", "killed": "died"}[how] in record["note"]
    assert (repo / "AGENTS.md").read_text(encoding="utf-8") == "# Payments\n"


# -- mcp serve -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_mcp_serve_calls_the_running_runtime_with_the_session_s_token(tmp_path: Path) -> None:
    home = enable_knowledge(tmp_path / "home")
    tree = tmp_path / "alpha"
    tree.mkdir()
    (tree / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    with Runtime.open(home, realm="none") as rt:
        rt.knowledge.register_repository("alpha", tree, members=["deven", "alice"])
        evidence_chain(rt, work=work_item("alpha"), proposal=candidate("alpha shared"))
        evidence_chain(rt, work=work_item("alpha"), proposal=candidate("deven's own", visibility="private"))
        alice = dispatch_session(host_context(rt), "work", "alice", role="implement", parent_grant=owner_grant(rt),
                                        work=work_item("alpha")).token
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "resident.cli", "--home", str(home), "mcp", "serve"],
        env={**_environment(home), GRANT_TOKEN_ENV: alice},
    )

    async def run() -> tuple[list[str], Any, Any]:
        async with Client(server) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            arguments = {"project_id": "alpha", "repository_id": "alpha"}
            return listed, await client.call_tool(CONTEXT_TOOL, arguments), await client.call_tool(
                CONTEXT_TOOL, {**arguments, "member": "deven"}
            )

    with UpProcess(home):
        # The home is held by the runtime that is up: the server can only have reached it over the API.
        listed, result, smuggled = asyncio.run(run())
    assert listed == [CONTEXT_TOOL]
    assert result.is_error is False, result.content
    assert sorted(entry["title"] for entry in result.structured_content["entries"]) == ["alpha shared"]
    assert smuggled.is_error is True
    assert "unknown field" in smuggled.content[0].text


def test_an_ingest_run_in_process_reports_its_files_to_the_command_s_progress_callback(tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    seen: list[tuple[int, int]] = []
    with Runtime.open(enable_knowledge(tmp_path / "home"), realm="none") as rt:
        rt.knowledge.create_bank("handbook")
        reporting = INGEST_PROGRESS.set(lambda done, total: seen.append((done, total)))
        try:
            report = InProcess(rt).run(knowledge_ops.INGEST, Ingest("handbook", (docs,)))
        finally:
            INGEST_PROGRESS.reset(reporting)
    assert report.files == 3
    assert seen[-1] == (3, 3)
