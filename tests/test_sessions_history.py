"""History and curation: harness sessions on disk are listed, attributed only by the owner's import
(redacted, once), curated into memory through the admission gate, and carried by a member's export."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from resident import Runtime
from resident.errors import ExportInvalid, InvalidInput, MemoryDisabled, UnknownSession
from resident.messages.portability import MemberExport
from resident.messages.sessions import Harness
from resident.messages.sessions_calls import SkippedSession
from resident.runtime.sessions.portability import sessions_checksum
from resident.runtime.sessions.transcripts import harness_home
from tests.session_fixtures import FIXTURES, fixture_path, load, planted_secrets
from tests.session_helpers import fake, files_holding


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime.open(tmp_path / "home", realm="none") as runtime:
        runtime.memory.enable()
        yield runtime


def history(tmp_path: Path, harness: Harness, planted: dict[str, str]) -> Path:
    """A harness's history folder holding its fixture transcript (secrets planted), laid out as on disk."""
    root = tmp_path / f"{harness}-history"
    source = fixture_path(harness)
    target = root / source.relative_to(FIXTURES / harness)
    target.parent.mkdir(parents=True)
    target.write_bytes(load(harness, planted))
    return root


@pytest.mark.parametrize(
    ("harness", "external", "title"),
    [
        ("claude-code", "6f1c2d7e-8a9b-4c3d-9e0f-1a2b3c4d5e6f", "payments: flaky retry test"),
        ("codex", "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", "Add a --dry-run flag to deploy.sh that prints the commands"),
        ("pi", "a3b4c5d6-e7f8-4a0b-9c1d-2e3f4a5b6c7d", "ledger cent drift"),
    ],
)
def test_candidates_list_a_harness_history_with_its_ids_titles_and_directories(
    rt: Runtime, tmp_path: Path, harness: Harness, external: str, title: str
):
    (candidate,) = rt.sessions.candidates(harness, history(tmp_path, harness, planted_secrets()))
    assert candidate.id == external
    assert candidate.title.startswith(title)
    assert candidate.cwd.startswith("/home/alice/src/")
    assert candidate.attributed_to == ""
    assert rt.sessions.list() == [], "listing attributes nothing"


def test_the_default_history_of_a_harness_is_where_its_own_variables_point(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = history(tmp_path, "claude-code", planted_secrets())
    config = tmp_path / "claude-config"
    shutil.copytree(root, config / "projects")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert [c.id for c in rt.sessions.candidates("claude-code")] == ["6f1c2d7e-8a9b-4c3d-9e0f-1a2b3c4d5e6f"]


def test_importing_attributes_the_picked_session_redacted_and_only_once(rt: Runtime, tmp_path: Path):
    planted = planted_secrets()
    root = history(tmp_path, "codex", planted)
    with pytest.raises(UnknownSession, match="is not among them"):
        rt.sessions.import_sessions(["nope", "019a2d7a"], member="deven", harness="codex", path=root)
    assert rt.sessions.list() == [], "every id is checked before anything is imported"
    report = rt.sessions.import_sessions(["019a2d7a"], member="deven", harness="codex", path=root)
    (session,) = report.imported
    assert (session.origin, session.state, session.member, session.execution) == ("imported", "recovered", "deven", "")
    # Its permissions instructions, environment block and world_state line are metadata, not turns.
    assert session.turns == 14
    assert "aws-secret-key" in dict(session.redactions)
    assert files_holding(rt.home / "store.1", planted.values()) == []
    again = rt.sessions.import_sessions(["019a2d7a"], member="alice", harness="codex", path=root)
    assert again.imported == ()
    assert again.skipped == (
        SkippedSession(id="019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", why=f"already in session {session.id}"),
    )
    (listed,) = rt.sessions.candidates("codex", root)
    assert listed.attributed_to == session.id


def test_sessions_started_outside_the_runtime_are_never_attributed_by_a_session(rt: Runtime, tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    own = harness_home(rt.home, "deven", "claude-code")
    earlier = own / "projects" / "-elsewhere" / "0000aaaa-0000-4000-8000-000000000000.jsonl"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(load("claude-code", planted_secrets()))
    launch = rt.sessions.start("deven", harness="claude-code", command=fake("--as", "claude-code"),
                               directory=str(repo))
    # Meanwhile deven's Claude Code home gains another directory's session (started by hand there).
    meanwhile = own / "projects" / "-home-alice-src-payments" / "1111bbbb-0000-4000-8000-000000000000.jsonl"
    meanwhile.parent.mkdir(parents=True)
    meanwhile.write_bytes(load("claude-code", planted_secrets()))
    launch.run()
    session = rt.sessions.end(launch.session, 0)
    assert session is not None
    assert [Path(p.source).parent.name for p in session.parts] == [str(repo).replace("/", "-").replace("_", "-")]
    assert [s.id for s in rt.sessions.list()] == [session.id]


def test_curation_offers_excerpts_and_admits_one_through_the_gate_citing_its_session(rt: Runtime, tmp_path: Path):
    root = history(tmp_path, "pi", planted_secrets())
    (session,) = rt.sessions.import_sessions(["a3b4c5d6"], member="deven", harness="pi", path=root).imported
    offered = rt.sessions.excerpts("deven")
    # The abandoned branch's findings are not offered; its summary is.
    assert [e.kind for e in offered] == ["summary", "summary", "conclusion"]
    conclusion = offered[2]
    assert conclusion.text.startswith("Rule for this ledger: parse money as Decimal")
    assert all(not e.admitted for e in offered)
    receipt = rt.sessions.admit("deven", conclusion.id, importance=0.8)
    record = rt.member("deven").get(receipt.id)
    assert record.source == f"session:{conclusion.id}"
    assert (record.kind, record.scope, record.body) == ("experience", "AGENT_CORE", conclusion.text)
    (change,) = [c for c in rt.evolution.log("deven") if c.kind == "memory-admission"]
    assert change.subject == receipt.id
    assert session.id in change.basis
    assert [e.admitted for e in rt.sessions.excerpts("deven", session=session.id)][2] == receipt.id
    with pytest.raises(InvalidInput, match="admitted already"):
        rt.sessions.admit("deven", conclusion.id)
    with pytest.raises(UnknownSession):  # an excerpt of deven's experience is not alice's to admit
        rt.sessions.admit("alice", conclusion.id)
    rt.evolution.rollback(change.id)
    assert rt.member("deven").get(receipt.id).lifecycle == "retracted"
    assert not rt.sessions.excerpts("deven")[2].admitted
    edited = rt.sessions.admit("deven", conclusion.id, text="Ledger: Decimal at the boundary, never float sums.")
    assert rt.member("deven").get(edited.id).body == "Ledger: Decimal at the boundary, never float sums."
    rt.memory.disable()
    with pytest.raises(MemoryDisabled):
        rt.sessions.admit("deven", offered[0].id)


def test_a_members_export_carries_its_sessions_and_another_home_derives_them_again(
    rt: Runtime, tmp_path: Path
):
    root = history(tmp_path, "claude-code", planted_secrets())
    (session,) = rt.sessions.import_sessions(["6f1c2d7e"], member="deven", harness="claude-code",
                                             path=root).imported
    export = tmp_path / "deven.json"
    rt.export_member("deven", export)
    with Runtime.open(tmp_path / "other", realm="none") as other:
        other.memory.enable()
        assert other.import_member(export).sessions == 1
        (moved,) = other.sessions.list(member="deven")
        assert (moved.id, moved.turns) == (session.id, session.turns)
        moved_turns, turns = other.sessions.show(moved.id).turns, rt.sessions.show(session.id).turns
        assert [t.text for t in moved_turns] == [t.text for t in turns]
        assert other.import_member(export).sessions == 0, "a session held already is skipped"


def test_an_edited_export_is_refused_whole_and_a_secret_smuggled_into_it_is_redacted_again(
    rt: Runtime, tmp_path: Path
):
    root = history(tmp_path, "command", {})
    (session,) = rt.sessions.import_sessions(["transcript"], member="deven", harness="command",
                                             path=root).imported
    export = tmp_path / "deven.json"
    rt.export_member("deven", export)
    document = json.loads(export.read_text())
    document["sessions"][0]["raw"][0] = base64.b64encode(zlib.compress(b'{"role":"user","text":"x"}\n')).decode()
    (tmp_path / "edited.json").write_text(json.dumps(document))
    with Runtime.open(tmp_path / "other", realm="none") as other:
        other.memory.enable()
        with pytest.raises(ExportInvalid, match="checksum"):
            other.import_member(tmp_path / "edited.json")
        assert other.sessions.list() == []
        # An edit that recomputes every digest and checksum still goes through redaction here again.
        token = planted_secrets()["GITHUB_TOKEN"]
        smuggled = f'{{"role":"assistant","text":"use {token}"}}\n'.encode()
        part = document["sessions"][0]["session"]["parts"][0]
        part["digest"] = hashlib.sha256(smuggled).hexdigest()
        document["sessions"][0]["raw"][0] = base64.b64encode(zlib.compress(smuggled)).decode()
        rebuilt = msgspec.json.decode(json.dumps(document).encode(), type=MemberExport)
        document["sessions_checksum"] = sessions_checksum("deven", rebuilt.sessions)
        (tmp_path / "smuggled.json").write_text(json.dumps(document))
        assert other.import_member(tmp_path / "smuggled.json").sessions == 1
        (turn,) = other.sessions.show(session.id).turns
        assert token not in turn.text
        assert "[REDACTED:github-token:" in turn.text
        assert files_holding(other.home / "store.1", [token]) == []
