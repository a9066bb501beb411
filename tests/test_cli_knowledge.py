"""`resident knowledge …` and `resident mcp serve` from the shell: output, --json, and the error contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resident import Runtime
from resident.terminal import printable
from tests.cli_helpers import expect_error, expect_json, expect_ok, invoke
from tests.knowledge_helpers import DOCS, enable_knowledge, evidence_chain, write_docs


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return enable_knowledge(tmp_path / "home")


def test_banks_ingest_and_search_as_json(home: Path, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    bank = expect_json(invoke(home, "knowledge", "banks", "create", "handbook", "--owner", "member:deven", "--json"))
    assert (bank["name"], bank["owner_kind"], bank["owner"]) == ("handbook", "member", "deven")
    listed = expect_json(invoke(home, "knowledge", "banks", "list", "--json"))
    assert [b["name"] for b in listed] == ["handbook"]
    report = expect_json(invoke(home, "knowledge", "ingest", "handbook", str(docs), "--json"))
    assert (report["files"], report["admitted"], report["rejected"]) == (3, 6, [])
    again = expect_json(invoke(home, "knowledge", "ingest", "handbook", str(docs), "--json"))
    assert (again["admitted"], len(again["skipped"])) == (0, 3)
    hits = expect_json(invoke(home, "knowledge", "search", "handbook", "迁移", "-k", "3", "--json"))
    assert hits[0]["title"] == "部署指南"
    assert set(hits[0]) >= {"title", "source", "score", "snippet"}
    superseded = expect_json(invoke(home, "knowledge", "search", "handbook", "deploy", "--state", "superseded",
                                    "--json"))
    assert superseded == []
    status = expect_json(invoke(home, "knowledge", "reindex", "--json"))
    assert status["pages"] == 6


def test_text_output_reports_rejections_and_hits(home: Path, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", {**DOCS, "bad.md": "# Bad\nx\x1b[2Jy\n"})
    expect_ok(invoke(home, "knowledge", "banks", "create", "handbook"))
    out = expect_ok(invoke(home, "knowledge", "ingest", "handbook", str(docs))).stdout
    assert "6 pages admitted" in out
    assert "rejected" in out
    assert "control characters" in out
    hits = expect_ok(invoke(home, "knowledge", "search", "handbook", "rollback")).stdout
    assert "Rollback" in hits
    assert "deploy.md" in hits


def test_a_hostile_file_name_is_printed_escaped_not_sent_to_the_terminal(home: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    hostile = docs / "\x1b]0;owned\x07\x1b[2J\u202e.html"
    hostile.write_text("x", encoding="utf-8")
    expect_ok(invoke(home, "knowledge", "banks", "create", "handbook"))
    out = expect_ok(invoke(home, "knowledge", "ingest", "handbook", str(hostile))).stdout
    assert "\x1b" not in out
    assert "\u202e" not in out  # a bidi override would reorder the line
    assert "\\u202e" in out
    assert "\\x1b]0;owned\\x07" in out
    assert printable("a\x1b[31mb\tc\r\u202e") == "a\\x1b[31mb\tc\\x0d\\u202e"  # tabs and newlines stay


def test_errors_are_one_line_and_json_stays_json(home: Path, tmp_path: Path) -> None:
    expect_error(invoke(home, "knowledge", "search", "nobank", "q"), "UnknownBank", naming=("nobank",))
    expect_error(invoke(home, "knowledge", "search", "nobank", "q", "--json"), "UnknownBank")
    expect_ok(invoke(home, "knowledge", "banks", "create", "handbook"))
    expect_error(invoke(home, "knowledge", "search", "handbook", "   ", "--json"), "TextInvalid")
    expect_error(invoke(home, "knowledge", "search", "handbook", "q", "-k", "101"), "UsageError", code=2)
    expect_error(invoke(home, "knowledge", "ingest", "handbook", str(tmp_path / "missing")), "IngestInvalid",
                 naming=("does not exist",))
    expect_error(invoke(home, "knowledge", "banks", "create", "Bad Name"), "InvalidInput")
    expect_error(invoke(home, "knowledge", "promote", "kn_" + "0" * 28, "--json"), "EntryNotFound")
    expect_error(invoke(home, "knowledge", "context", "--member", "victor", "--project", "p", "--repository", "r"),
                 "NotVisible")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    expect_error(invoke(home, "knowledge", "import-legacy", str(bad), "--json"), "InvalidInput", naming=("line 1",))


def test_knowledge_commands_say_how_to_turn_knowledge_on(tmp_path: Path) -> None:
    expect_error(invoke(tmp_path / "off", "knowledge", "banks", "list"), "KnowledgeDisabled",
                 naming=("[knowledge] enabled = true",))


def test_repositories_entries_promote_and_context(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    added = expect_json(invoke(home, "knowledge", "repos", "add", "resident", str(repo), "--member", "deven",
                               "--member", "alice", "--member", "oliver", "--json"))
    assert (added["project"], added["members"]) == ("resident", ["alice", "deven", "oliver"])
    with Runtime.open(home, realm="none") as rt:
        entry = evidence_chain(rt, accept=False).entry
    assert entry is not None
    [listed] = expect_json(invoke(home, "knowledge", "entries", "--state", "candidate", "--json"))
    assert listed["id"] == entry.id
    refused = expect_error(invoke(home, "knowledge", "promote", entry.id, "--json"), "PromotionRefused")
    assert "not accepted by the owner" in refused
    with Runtime.open(home, realm="none") as rt:
        rt.coordinator.accept(entry.execution)
    [served] = expect_json(invoke(home, "knowledge", "context", "--member", "alice", "--project", "resident",
                                  "--repository", "resident", "writer", "--json"))
    assert served["id"] == entry.id
    text = expect_ok(invoke(home, "knowledge", "context", "--member", "alice", "--project", "resident",
                            "--repository", "resident")).stdout
    assert "One writer per worktree" in text


def test_import_legacy_from_the_shell(home: Path, tmp_path: Path) -> None:
    legacy = tmp_path / "old.jsonl"
    legacy.write_text(json.dumps({"project": "p", "repository": "r", "kind": "fact", "title": "Old",
                                  "body": "from before"}) + "\n", encoding="utf-8")
    assert expect_json(invoke(home, "knowledge", "import-legacy", str(legacy), "--json")) == {
        "imported": 1, "skipped": 0,
    }
    [entry] = expect_json(invoke(home, "knowledge", "entries", "--json"))
    assert entry["state"] == "legacy_unverified"


def test_mcp_serve_without_a_grant_token_fails_in_one_line(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RESIDENT_GRANT_TOKEN", raising=False)
    expect_error(invoke(home, "mcp", "serve"), "GrantInvalid", naming=("--grant",))
    expect_error(invoke(home, "mcp", "serve", "--grant", "not-a-token"), "GrantInvalid")
    expect_error(invoke(home, "mcp", "serve", "--grant", "rgt_" + "A" * 43), "GrantInvalid",
                 naming=("not known",))
