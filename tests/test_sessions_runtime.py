"""Member sessions in-process: projection and exact restoration, transcripts found in each harness's
home, redaction before anything is stored, attribution, visibility and progress."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import yaml

from resident import Runtime
from resident.errors import HarnessNotFound, InvalidInput, ProjectionRefused, UnknownSession
from resident.messages.sessions import Harness
from resident.runtime.coordination import dispatch_session, resume_session
from resident.runtime.home.doctor import examine
from resident.runtime.runtime import host_context
from resident.runtime.sessions.start import resident_command
from resident.runtime.sessions.transcripts import harness_home
from resident.runtime.sessions.tree import Manifest, ManifestEntry, ProjectionTree, manifests
from resident.sessions.projection import MARKER, command_line
from resident.store.tables import EXECUTIONS, SESSION_RAW, SESSION_TURNS, SESSIONS
from tests.evolution_helpers import add_skills
from tests.session_fixtures import planted_secrets
from tests.session_helpers import fake, files_holding, planted_file, tree


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime.open(tmp_path / "home", realm="none") as runtime:
        runtime.memory.enable()
        yield runtime


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with its own instructions, a link between them, and a Claude settings folder."""
    root = tmp_path / "repo"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    (root / "AGENTS.md").write_text("# Payments\n\nRun `make test` before committing.\n")
    (root / "AGENTS.md").chmod(0o640)
    (root / "CLAUDE.md").symlink_to("AGENTS.md")
    (root / "src").mkdir()
    (root / "src" / "retry.py").write_text("def retry(): ...\n")
    return root


def test_a_claude_code_session_projects_the_member_and_restores_the_repository_exactly(rt: Runtime, repo: Path):
    before = tree(repo)
    launch = rt.sessions.start("deven", harness="claude-code", command=fake("--as", "claude-code"),
                               directory=str(repo), task="fix the flaky payments retry test")
    agents = (repo / "AGENTS.md").read_text()
    assert agents.startswith("# Payments\n\nRun `make test` before committing.\n"), "the project's own rules stay first"
    assert MARKER in agents
    assert "fix the flaky payments retry test" in agents
    assert (repo / "CLAUDE.md").read_text().endswith("@AGENTS.md\n")
    assert "make test" not in (repo / "CLAUDE.md").read_text(), "a CLAUDE.md linked to AGENTS.md is not said twice"
    assert not (repo / "CLAUDE.md").is_symlink()
    # Claude Code gets the runtime's MCP server, started with the session's environment (no token in the file).
    mcp = json.loads((repo / ".mcp.json").read_text())
    assert mcp["mcpServers"]["resident"]["args"][-2:] == ["mcp", "serve"]
    assert mcp["mcpServers"]["resident"]["command"].startswith("/")
    assert launch.token not in (repo / ".mcp.json").read_text()
    assert launch.run() == 0
    session = rt.sessions.end(launch.session, 0, token=launch.token)
    assert tree(repo) == before, "the repository is exactly as it was: files, modes, links, folders"
    assert not (repo / ".mcp.json").exists()
    assert session is not None
    assert session.outcome == "succeeded"
    assert session.turns == 5
    assert not manifests(rt.home)


def test_the_work_package_holds_recalled_memories_approved_principles_and_at_most_ten_skills(
    rt: Runtime, tmp_path: Path
):
    repo = tmp_path / "empty"
    repo.mkdir()
    recipes = [(f"payments-{i:02d}", f"Payments retry recipe {i}") for i in range(12)]
    names = add_skills(rt, tmp_path / "skills", recipes)
    for name in names:
        rt.skills.give(name, "deven")
    memory = rt.member("deven").remember("the payments retry test used wall time and flaked on CI")
    principle = rt.principles.propose("deven", "Never sleep in a test; inject the clock.", basis="retry flake")
    rt.principles.approve(principle.id)
    launch = rt.sessions.start("deven", harness="codex", command=fake("--as", "codex"), directory=str(repo),
                               task="payments retry test flakes")
    try:
        agents = (repo / "AGENTS.md").read_text()
        assert memory.id in agents
        assert "Never sleep in a test; inject the clock." in agents
        # The callback names this very `resident` by its absolute path: a harness's PATH may not have it.
        resident = command_line(resident_command())
        assert resident.startswith("/")
        assert f"{resident} recall deven" in agents
        assert "dispatch" not in agents, "an implementer is not told to coordinate"
        assert launch.execution in agents
        for folder in (".claude/skills", ".agents/skills"):
            projected = sorted(p.name for p in (repo / folder).iterdir())
            assert len(projected) == 10
            assert set(projected) <= set(names)
            skill = (repo / folder / projected[0] / "SKILL.md").read_text()
            front = yaml.safe_load(skill.split("---")[1])
            assert front["name"] == projected[0]
            assert front["description"].startswith("Payments retry recipe")
            assert f"resident skills read {projected[0]}" in skill
        assert not (repo / "CLAUDE.md").exists(), "only Claude Code gets a CLAUDE.md"
    finally:
        launch.run()
        rt.sessions.end(launch.session, 0)
    assert list(repo.iterdir()) == []


@pytest.mark.parametrize(("harness", "variable"), [
    ("claude-code", "CLAUDE_CONFIG_DIR"), ("codex", "CODEX_HOME"), ("pi", "PI_CODING_AGENT_SESSION_DIR"),
])
def test_each_harness_writes_into_the_members_own_home_and_its_transcript_is_recovered(
    rt: Runtime, tmp_path: Path, harness: Harness, variable: str
):
    repo = tmp_path / "repo"
    repo.mkdir()
    launch = rt.sessions.start("alice", harness=harness, command=fake("--as", harness), directory=str(repo))
    own = harness_home(rt.home, "alice", harness)
    assert launch.env[variable] == str(own)
    assert launch.env["RESIDENT_GRANT_TOKEN"] == launch.token
    assert launch.env["RESIDENT_HOME"] == str(rt.home)
    assert launch.run() == 0
    session = rt.sessions.end(launch.session, 0)
    assert session is not None
    assert len(session.parts) == 1
    assert session.parts[0].source.startswith(str(own))
    turns = rt.sessions.show(session.id).turns
    assert turns[0].text.startswith("Work on the task in AGENTS.md. It starts: # alice")
    assert "[REDACTED:" in "".join(t.text for t in turns), "the grant token it printed is redacted"


def test_no_planted_secret_survives_in_the_store_the_export_or_a_backup(rt: Runtime, repo: Path, tmp_path: Path):
    secrets = planted_secrets()
    launch = rt.sessions.start("deven", harness="command", directory=str(repo), task="deploy with the keys",
                               command=fake("--secrets", str(planted_file(tmp_path, secrets))))
    launch.run()
    session = rt.sessions.end(launch.session, 0, token=launch.token)
    assert session is not None
    kinds = dict(session.redactions)
    assert {"openai-key", "github-token", "private-key", "jwt", "injected"} <= set(kinds)
    text = "".join(turn.text for turn in rt.sessions.show(session.id).turns) + rt.sessions.raw(session.id).decode()
    everything = [*secrets.values(), launch.token]
    assert not [v for v in everything if v in text]
    assert not (rt.home / "sessions" / session.id).exists(), "the command's own transcript file is gone"
    rt.export_member("deven", tmp_path / "deven.json")
    rt.backup(tmp_path / "backup")
    assert files_holding(rt.home / "store.1", everything) == [], "no secret in the raw LMDB bytes"
    assert files_holding(tmp_path / "backup", everything) == []
    holders = {hit.partition(": ")[0] for hit in files_holding(tmp_path, everything)}
    assert holders == {str(tmp_path / "planted.json")}, "only the test's own list of the planted values holds them"
    exported = msgspec.json.decode((tmp_path / "deven.json").read_bytes())
    assert [s["session"]["id"] for s in exported["sessions"]] == [session.id]


def test_a_projection_never_writes_through_a_symbolic_link(rt: Runtime, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "authorized_keys").write_text("ssh-ed25519 AAAA owner\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".claude").symlink_to(outside)
    (repo / "AGENTS.md").symlink_to(outside / "authorized_keys")
    add_skills(rt, tmp_path / "skills", [("deploy-k8s", "Deploy to Kubernetes")])
    rt.skills.give("deploy-k8s", "deven")
    before, outside_before = tree(repo), tree(outside)
    with pytest.raises(ProjectionRefused, match="symbolic link"):
        rt.sessions.start("deven", harness="command", command=fake(), directory=str(repo), task="deploy to kubernetes")
    assert tree(outside) == outside_before
    assert tree(repo) == before, "the link at AGENTS.md was put back"
    (execution,) = rt.coordinator.executions()
    assert execution.outcome == "failed"
    assert "did not start" in execution.error
    (session,) = rt.sessions.list()
    assert session.state == "recovered"
    assert "symbolic link" in session.note


def test_a_link_at_agents_md_is_replaced_and_put_back_and_its_target_is_never_quoted(rt: Runtime, tmp_path: Path):
    outside = tmp_path / "private.md"
    outside.write_text("the owner's private notes\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "AGENTS.md").symlink_to(outside)
    launch = rt.sessions.start("deven", harness="command", command=fake(), directory=str(repo))
    assert not (repo / "AGENTS.md").is_symlink()
    assert "private notes" not in (repo / "AGENTS.md").read_text()
    launch.run()
    rt.sessions.end(launch.session, 0)
    assert (repo / "AGENTS.md").readlink() == outside
    assert outside.read_text() == "the owner's private notes\n"


def test_a_file_the_harness_changed_is_restored_and_its_version_kept(rt: Runtime, repo: Path):
    before = tree(repo)
    launch = rt.sessions.start("deven", harness="command", command=fake("--edit-agents", "--make", "NOTES.md"),
                               directory=str(repo))
    launch.run()
    session = rt.sessions.end(launch.session, 0)
    after = tree(repo)
    assert after.pop("NOTES.md")[2] == b"work the member did\n", "the member's work stays"
    assert after == before
    assert session is not None
    assert "was changed during the session" in session.note
    (kept,) = (rt.home / "sessions" / session.id).glob("changed-*")
    assert kept.read_text().endswith("A note the harness added.\n")


def test_a_second_session_in_the_same_directory_is_refused_while_the_first_runs(rt: Runtime, repo: Path):
    first = rt.sessions.start("deven", harness="command", command=fake(), directory=str(repo))
    try:
        with pytest.raises(ProjectionRefused, match=f"in use by session {first.session}"):
            rt.sessions.start("alice", harness="command", command=fake(), directory=str(repo))
    finally:
        first.run()
        rt.sessions.end(first.session, 0)
    assert [s.member for s in rt.sessions.list()] == ["deven"]


def test_bad_requests_are_refused_before_anything_starts(rt: Runtime, tmp_path: Path):
    with pytest.raises(HarnessNotFound, match="not an executable on PATH"):
        rt.sessions.start("deven", harness="claude-code", command=("no-such-harness-xyz",), directory=str(tmp_path))
    with pytest.raises(InvalidInput, match="unknown harness"):
        rt.sessions.start("deven", harness="cursor", command=fake(), directory=str(tmp_path))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="needs the command"):
        rt.sessions.start("deven", harness="command", directory=str(tmp_path))
    with pytest.raises(InvalidInput, match="not a folder"):
        rt.sessions.start("deven", harness="command", command=fake(), directory=str(tmp_path / "missing"))
    assert rt.coordinator.executions() == []
    assert rt.sessions.list() == []
    assert not manifests(rt.home)


def test_a_session_takes_over_an_execution_dispatched_earlier_which_then_points_to_it(rt: Runtime, tmp_path: Path):
    grant = rt.coordinator.issue_grant(actions={"recall", "remember"})
    dispatched = dispatch_session(host_context(rt), "review the retry fix", "alice", role="review", parent_grant=grant,
                                         actions={"recall", "remember"})
    repo = tmp_path / "repo"
    repo.mkdir()
    launch = rt.sessions.start("alice", harness="command", command=fake(), directory=str(repo),
                               task=dispatched.execution.id)
    with rt._internal.store.reader() as reader:
        assert reader.get(EXECUTIONS, dispatched.execution.id).session == launch.session  # type: ignore[union-attr]
    resumed = resume_session(host_context(rt), launch.token)
    assert resumed.execution.id == dispatched.execution.id
    assert resumed.grant.id == dispatched.grant.id
    progress = rt.coordinator.progress()
    assert [(s.id, s.member, s.harness) for s in progress.sessions] == [(launch.session, "alice", "command")]
    with pytest.raises(InvalidInput, match="no session yet"):
        rt.sessions.start("alice", harness="command", command=fake(), directory=str(tmp_path),
                          task=dispatched.execution.id)
    launch.run()
    rt.sessions.end(launch.session, 3)
    (execution,) = rt.coordinator.executions()
    assert (execution.outcome, execution.error) == ("failed", "the harness exited with status 3")
    assert rt.coordinator.progress().sessions == ()


def test_a_member_sees_only_its_own_sessions(rt: Runtime, tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    session = rt.sessions.run(rt.sessions.start("deven", harness="command", command=fake(), directory=str(repo)))
    assert session is not None
    grant = rt.coordinator.issue_grant(actions={"recall"})
    deven, alice = (
        rt.with_grant(dispatch_session(host_context(rt), "look back", member, role="review", parent_grant=grant,
                                              actions={"recall"}).token)
        for member in ("deven", "alice")
    )
    assert [s.id for s in deven.sessions.list()] == [session.id]
    assert alice.sessions.list() == []
    assert alice.sessions.list(member="deven") == []
    with pytest.raises(UnknownSession):
        alice.sessions.show(session.id)
    with pytest.raises(UnknownSession):
        alice.sessions.raw(session.id)
    assert deven.sessions.show(session.id).session.id == session.id


def test_session_state_rebuilds_from_the_event_log(rt: Runtime, tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    rt.sessions.run(rt.sessions.start("deven", harness="command", command=fake(), directory=str(repo)))
    rt.sessions.run(rt.sessions.start("alice", harness="codex", command=fake("--as", "codex"), directory=str(repo)))
    store = rt._internal.store
    live, replayed = store.state_tables(), store.replay()
    for table in (SESSIONS, SESSION_TURNS, SESSION_RAW, EXECUTIONS):
        assert live[table.name] == replayed[table.name], table.name
        assert live[table.name]


def test_a_transcript_that_is_a_link_to_another_file_is_never_read(rt: Runtime, tmp_path: Path):
    secret = tmp_path / "id_ed25519"
    secret.write_text('{"role":"user","text":"PRIVATE-MARKER-a1b2c3"}\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    linking = f'ln -s "{secret}" "$RESIDENT_TRANSCRIPT"'
    command = rt.sessions.run(rt.sessions.start("deven", harness="command", command=("sh", "-c", linking),
                                                directory=str(repo)))
    projects = f'mkdir -p "$CLAUDE_CONFIG_DIR/projects/x" && ln -s "{secret}" "$CLAUDE_CONFIG_DIR/projects/x/a.jsonl"'
    claude = rt.sessions.run(rt.sessions.start("deven", harness="claude-code", command=("sh", "-c", projects),
                                               directory=str(repo)))
    assert command is not None
    assert claude is not None
    assert (command.turns, claude.turns) == (0, 0)
    assert "not read" in command.note
    assert files_holding(rt.home / "store.1", ["PRIVATE-MARKER-a1b2c3"]) == []


def test_a_forged_manifest_cannot_make_a_restore_touch_anything_outside_the_directory(rt: Runtime, tmp_path: Path):
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    manifest = Manifest(
        session="ses_forged", member="deven", harness="command", directory=str(repo), process=0, process_start="0",
        started_at=0.0, entries=[ManifestEntry(path="../precious.txt", before="absent", written="x"),
                                 ManifestEntry(path=str(outside), before="absent", written="x")],
        folders=["..", "/tmp"],
    )
    notes = ProjectionTree(rt.home, manifest).restore()
    assert outside.read_text() == "keep me\n"
    assert len(notes) == 4
    assert all("was not touched" in note for note in notes)


@pytest.mark.parametrize("name", ["..", ".", "ses_forged/../..", ""])
def test_ending_a_session_by_a_name_that_is_no_session_id_touches_no_folder(rt: Runtime, tmp_path: Path, name: str):
    # A manifest where `sessions/..` would find one: the home's own folder, which an end would tidy away.
    forged = Manifest(session="ses_" + "0" * 28, member="deven", harness="command", directory=str(tmp_path),
                      process=0, process_start="0", started_at=0.0)
    (rt.home / "manifest.json").write_bytes(msgspec.json.encode(forged))
    before = sorted(path.name for path in rt.home.iterdir())
    with pytest.raises(UnknownSession, match="not a session id"):
        rt.sessions.end(name, 0)
    assert sorted(path.name for path in rt.home.iterdir()) == before


def test_a_credential_typed_into_the_task_is_stored_nowhere(rt: Runtime, repo: Path, tmp_path: Path):
    secrets = planted_secrets()
    task = f"deploy with GITHUB_TOKEN={secrets['GITHUB_TOKEN']} and mysql -u app -pS3cretPassw0rd shop"
    launch = rt.sessions.start("deven", harness="command", directory=str(repo), task=task, command=fake())
    projected = (repo / "AGENTS.md").read_text()
    launch.run()
    session = rt.sessions.end(launch.session, 0, token=launch.token)
    assert session is not None
    assert "[REDACTED:github-token:" in session.task
    planted = [secrets["GITHUB_TOKEN"], "S3cretPassw0rd"]
    assert not [value for value in planted if value in projected], "the harness is not handed it either"
    with rt._internal.store.reader() as reader:
        execution = reader.get(EXECUTIONS, session.execution)
    assert execution is not None
    assert not [value for value in planted if value in execution.task]
    assert files_holding(rt.home / "store.1", planted) == [], "no copy in the raw LMDB bytes"


@pytest.mark.parametrize(
    "make", ["os.mkdir(path)", "os.mkfifo(path)", "os.symlink('/etc/passwd', path)"], ids=["folder", "fifo", "link"]
)
def test_a_transcript_path_made_into_something_else_does_not_wedge_the_session(rt: Runtime, repo: Path, make: str):
    hostile = (sys.executable, "-c", f"import os; path = os.environ['RESIDENT_TRANSCRIPT']; {make}")
    launch = rt.sessions.start("deven", harness="command", directory=str(repo), task="t", command=hostile)
    session = rt.sessions.end(launch.session, launch.run(), token=launch.token)
    assert session is not None
    assert session.state == "recovered"
    assert "not read" in session.note
    assert not (rt.home / "sessions" / session.id).exists(), "the session's folder is gone with what was made in it"
    follower = rt.sessions.start("deven", harness="command", directory=str(repo), task="next", command=fake())
    follower.run()
    after = rt.sessions.end(follower.session, 0, token=follower.token)
    assert after is not None
    assert after.state == "recovered"


def _run_command(rt: Runtime, repo: Path, code: str):
    """Start a command session in `repo` running the Python `code` (with `os` and `folder`, the session's own)."""
    prelude = "import os; folder = os.path.dirname(os.environ['RESIDENT_TRANSCRIPT']); "
    launch = rt.sessions.start("deven", harness="command", directory=str(repo), task="t",
                               command=(sys.executable, "-c", prelude + code))
    session = rt.sessions.end(launch.session, launch.run(), token=launch.token)
    assert session is not None
    return session


def test_a_corrupted_manifest_fails_the_session_and_says_what_was_left(rt: Runtime, repo: Path):
    before = (repo / "AGENTS.md").read_bytes()
    session = _run_command(rt, repo, "open(os.path.join(folder, 'manifest.json'), 'w').write('{broken')")
    assert session.outcome == "failed", "a directory left projected is no success"
    assert "manifest" in session.note
    assert str(repo) in session.note
    kept = rt.home / "sessions" / session.id
    assert [p.read_bytes() for p in kept.glob("backup-*")] == [before], "the original is kept for the owner"
    assert not (kept / "manifest.json").exists(), "no later start or recover tries it again"
    follower = rt.sessions.start("deven", harness="command", directory=str(repo), task="next", command=fake())
    follower.run()
    assert rt.sessions.end(follower.session, 0, token=follower.token) is not None


def test_a_hard_linked_agents_md_comes_back_as_the_same_file(rt: Runtime, repo: Path):
    (repo / "AGENTS.md").unlink()
    (repo / "docs").mkdir()
    (repo / "docs" / "AGENTS.md").write_text("# shared instructions\n")
    os.link(repo / "docs" / "AGENTS.md", repo / "AGENTS.md")
    inode = (repo / "AGENTS.md").stat().st_ino
    session = _run_command(rt, repo, "pass")
    assert session.outcome == "succeeded"
    assert (repo / "AGENTS.md").stat().st_ino == inode
    assert (repo / "AGENTS.md").stat().st_nlink == 2
    assert (repo / "docs" / "AGENTS.md").read_text() == "# shared instructions\n"
    assert not [p.name for p in repo.iterdir() if "resident" in p.name], "the kept original is renamed back"


def test_a_hard_link_the_harness_broke_fails_the_session_with_its_bytes_back(rt: Runtime, repo: Path):
    (repo / "AGENTS.md").unlink()
    (repo / "shared.md").write_text("# shared instructions\n")
    os.link(repo / "shared.md", repo / "AGENTS.md")
    session = _run_command(
        rt, repo, "[os.unlink(name) for name in os.listdir('.') if name.endswith('.original')]"
    )
    assert session.outcome == "failed"
    assert "hard links" in session.note
    assert (repo / "AGENTS.md").read_text() == "# shared instructions\n"


@pytest.mark.parametrize("stopped_after", ["the manifest", "the kept link"])
def test_a_session_killed_while_keeping_a_hard_linked_file_restores_it_exactly(
    rt: Runtime, tmp_path: Path, stopped_after: str
):
    repo = tmp_path / "linked"
    repo.mkdir()
    (repo / "shared.md").write_text("# shared\n")
    os.link(repo / "shared.md", repo / "AGENTS.md")
    inode = (repo / "AGENTS.md").stat().st_ino
    manifest = Manifest(session="ses_" + "1" * 28, member="deven", harness="command", directory=str(repo),
                        process=0, process_start="0", started_at=0.0)
    tree = ProjectionTree(rt.home, manifest)
    fd = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    try:
        entry = tree._back_up(fd, "AGENTS.md", "AGENTS.md")  # what `write` records before it touches anything
        manifest.entries.append(entry)
        if stopped_after == "the kept link":
            tree._keep_original(fd, "AGENTS.md", entry)
    finally:
        os.close(fd)
    assert tree.restore() == []
    assert tree.unrestored == []
    assert sorted(p.name for p in repo.iterdir()) == ["AGENTS.md", "shared.md"]
    assert (repo / "AGENTS.md").stat().st_ino == inode
    assert (repo / "AGENTS.md").stat().st_nlink == 2


def test_a_crashed_session_with_a_corrupted_manifest_is_recovered_when_named(rt: Runtime, repo: Path):
    launch = rt.sessions.start("deven", harness="command", directory=str(repo), task="t", command=fake())
    (rt.home / "sessions" / launch.session / "manifest.json").write_text("{broken")
    assert rt.sessions.recover() == [], "unnamed, a session whose process may live is left alone"
    [session] = rt.sessions.recover(launch.session)
    assert session.outcome == "failed"
    assert "manifest" in session.note


def test_doctor_names_a_session_left_running_and_a_named_recover_ends_it(tmp_path: Path):
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "AGENTS.md").write_text("# Payments\n")
    with Runtime.open(home, realm="none") as runtime:
        launch = runtime.sessions.start("deven", harness="command", command=fake(), directory=str(repo))
        # The launching process dies here (the session is never ended) and the manifest is destroyed.
        (home / "sessions" / launch.session / "manifest.json").write_text("{not json")
    report = examine(home)
    assert not report.sound, "a session left running is no sound home"
    [finding] = [f for f in report.findings if f.check == "sessions"]
    assert finding.problem_count == 1
    assert launch.session in finding.problems[0]
    assert "resident session recover" in finding.problems[0]
    with Runtime.open(home, realm="none") as runtime:
        [ended] = runtime.sessions.recover(launch.session)
        assert ended.outcome == "failed"
        assert str(repo) in ended.note
    [after] = [f for f in examine(home).findings if f.check == "sessions"]
    assert after.problem_count == 0
    assert list((home / "sessions" / launch.session).glob("backup-*")), "the original is kept for the owner"
