"""Older data enters as legacy_unverified; backups, restores and member exports carry knowledge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from resident import Runtime
from resident.config import load_config
from resident.errors import ConfigError, ExportInvalid, InvalidInput, KnowledgeDisabled
from resident.messages.knowledge import EntryImported
from resident.messages.portability import MemberExport
from resident.messages.store import Commit
from tests.knowledge_helpers import candidate, enable_knowledge, entries_of, evidence_chain, open_knowledge, write_docs
from tests.memory_helpers import events_of

LEGACY: list[dict[str, Any]] = [
    {"project": "resident", "repository": "resident", "kind": "decision", "title": "Use LMDB",
     "body": "All durable state lives in LMDB.", "state": "verified", "id": "old-1"},
    {"project": "resident", "repository": "resident", "kind": "fact", "title": "Writers",
     "body": "One writer.", "visibility": "private", "owner": "deven",
     "sources": [{"ref": "https://x/y", "digest": ""}]},
]


def test_legacy_entries_are_imported_unverified_once_and_all_or_nothing(tmp_path: Path) -> None:
    lines = tmp_path / "legacy.jsonl"
    lines.write_text("\n".join(json.dumps(item) for item in LEGACY) + "\n", encoding="utf-8")
    array = tmp_path / "legacy.json"
    array.write_text(json.dumps(LEGACY), encoding="utf-8")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(LEGACY[0]) + "\n" + json.dumps({**LEGACY[1], "kind": "rumour"}) + "\n",
                      encoding="utf-8")
    with open_knowledge(tmp_path / "home") as rt:
        with pytest.raises(InvalidInput, match="line 2"):
            rt.knowledge.import_legacy(broken)
        assert entries_of(rt) == {}
        result = rt.knowledge.import_legacy(lines)
        assert (result.imported, result.skipped) == (2, 0)
        assert {e.state for e in entries_of(rt).values()} == {"legacy_unverified"}
        assert "was old-1, verified" in next(e.reason for e in entries_of(rt).values() if e.title == "Use LMDB")
        again = rt.knowledge.import_legacy(array)
        assert (again.imported, again.skipped) == (0, 2)
        assert len([e for e in events_of(rt) if isinstance(e, EntryImported)]) == 2
        with pytest.raises(InvalidInput, match="does not exist"):
            rt.knowledge.import_legacy(tmp_path / "none.jsonl")


def test_an_entry_claiming_a_state_on_import_is_refused_by_the_store(tmp_path: Path) -> None:
    with open_knowledge(tmp_path / "home") as rt:
        lines = tmp_path / "legacy.jsonl"
        lines.write_text(json.dumps(LEGACY[0]) + "\n", encoding="utf-8")
        rt.knowledge.import_legacy(lines)
        [entry] = entries_of(rt).values()
        forged = msgspec.structs.replace(entry, id="kn_" + "f" * 28, state="verified")
        with pytest.raises(InvalidInput, match="legacy_unverified, not verified"):
            rt._internal.write(Commit(events=(EntryImported(at=0.0, entry=forged),)))


def test_a_backup_restores_banks_pages_and_entries_and_the_index_is_built_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    with open_knowledge(home) as rt:
        rt.knowledge.create_bank("handbook")
        rt.knowledge.ingest("handbook", [write_docs(tmp_path / "docs")])
        rt.knowledge.register_repository("resident", repo, members=["deven", "alice", "oliver"])
        entry = evidence_chain(rt).entry
        rt.backup(tmp_path / "backup")
    restored = tmp_path / "restored"
    Runtime.restore(tmp_path / "backup", restored)
    assert load_config(restored / "resident.toml").knowledge.enabled
    with Runtime.open(restored, realm="none") as rt:
        assert rt.knowledge.index_status().rebuilt
        assert rt.knowledge.search("handbook", "迁移")[0].title == "部署指南"
        assert entry is not None
        assert rt.knowledge.entry(entry.id).state == "verified"
        assert [e.id for e in rt.knowledge.context("alice", "resident", "resident")] == [entry.id]


def test_a_member_export_carries_its_own_banks_pages_and_private_entries_as_legacy(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    path = tmp_path / "deven.json"
    with open_knowledge(tmp_path / "source") as rt:
        rt.memory.enable()
        rt.member("deven").remember("deploys need the migration first")
        rt.knowledge.create_bank("deven-notes", owner="member:deven")
        rt.knowledge.create_bank("team", owner="workspace:acme")
        rt.knowledge.ingest("deven-notes", [write_docs(tmp_path / "docs")])
        rt.knowledge.ingest("team", [write_docs(tmp_path / "team", {"t.md": "# Team\nshared words\n"})])
        rt.knowledge.register_repository("resident", repo, members=["deven", "alice", "oliver"])
        private = evidence_chain(rt, proposal=candidate("Deven's own", visibility="private")).entry
        shared = evidence_chain(rt, proposal=candidate("Shared")).entry
        rt.export_member("deven", path)
    document = msgspec.json.decode(path.read_bytes(), type=MemberExport)
    assert document.knowledge is not None
    assert [b.name for b in document.knowledge.banks] == ["deven-notes"]
    assert len(document.knowledge.pages) == 6
    assert private is not None
    assert shared is not None
    assert [e.id for e in document.knowledge.entries] == [private.id]

    with open_knowledge(tmp_path / "target") as rt:
        rt.memory.enable()
        rt.import_member(path)
        assert rt.knowledge.search("deven-notes", "despliegue")[0].title == "Despliegue"
        arrived = entries_of(rt)[private.id]
        assert arrived.state == "legacy_unverified"
        assert arrived.evidence == ()
        assert shared.id not in entries_of(rt)


def test_an_export_whose_knowledge_was_altered_or_arrives_where_knowledge_is_off_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deven.json"
    with open_knowledge(tmp_path / "source") as rt:
        rt.memory.enable()
        rt.member("deven").remember("a memory")
        rt.knowledge.create_bank("deven-notes", owner="member:deven")
        rt.knowledge.ingest("deven-notes", [write_docs(tmp_path / "docs")])
        rt.export_member("deven", path)
    raw = json.loads(path.read_bytes())
    raw["knowledge"]["banks"][0]["owner"] = "alice"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(raw), encoding="utf-8")
    with open_knowledge(tmp_path / "target") as rt:
        rt.memory.enable()
        with pytest.raises(ExportInvalid, match="checksum"):
            rt.import_member(tampered)
        assert rt.knowledge.banks() == []
    with Runtime.open(tmp_path / "off", realm="none") as rt:
        rt.memory.enable()
        with pytest.raises(KnowledgeDisabled):
            rt.import_member(path)


def test_the_knowledge_switch_in_resident_toml_is_checked(tmp_path: Path) -> None:
    home = enable_knowledge(tmp_path / "home")
    assert load_config(home / "resident.toml").knowledge.enabled
    (home / "resident.toml").write_text('[knowledge]\nenabled = "yes"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="true or false"):
        load_config(home / "resident.toml")
    (home / "resident.toml").write_text("[knowledge]\nenable = true\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key `enable`"):
        load_config(home / "resident.toml")
    (home / "resident.toml").write_text('[team]\ncoordinator = "samuel"\n', encoding="utf-8")
    assert not load_config(home / "resident.toml").knowledge.enabled
