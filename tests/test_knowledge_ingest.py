"""Ingest: files into pages through the gate, one write per file, unchanged files admit nothing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.errors import IngestInvalid, InvalidInput, KnowledgeDisabled, NotVisible, UnknownBank, UnknownMember
from resident.messages.knowledge import Page, PageAdmitted, PageSuperseded, SourceIngested
from resident.messages.memory import Principal
from resident.store.tables import PAGE_SOURCES, PAGES
from tests.knowledge_helpers import DOCS, open_knowledge, write_docs
from tests.memory_helpers import events_of


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with open_knowledge(tmp_path / "home") as runtime:
        runtime.knowledge.create_bank("handbook", owner="member:deven")
        yield runtime


def pages_of(rt: Runtime) -> dict[str, Page]:
    with rt._internal.store.reader() as reader:
        return dict(reader.items(PAGES))


def test_a_folder_in_three_languages_is_split_into_pages_each_written_with_its_event(rt: Runtime,
                                                                                       tmp_path: Path) -> None:
    report = rt.knowledge.ingest("handbook", [write_docs(tmp_path / "docs")])
    assert (report.files, report.admitted, report.superseded, report.rejected) == (3, 6, 0, ())
    pages = pages_of(rt)
    assert set(report.pages) == set(pages)
    admitted = [e.page for e in events_of(rt) if isinstance(e, PageAdmitted)]
    assert {p.id for p in admitted} == set(pages)
    assert {p.title for p in admitted} == {"Deploy guide", "Rollback", "Despliegue", "Reversión", "部署指南", "回滚"}
    deploy = next(p for p in admitted if p.title == "Deploy guide")
    assert deploy.source.path == str((tmp_path / "docs" / "deploy.md").resolve())
    assert len(deploy.source.sha256) == 64


def test_reingesting_unchanged_files_admits_nothing(rt: Runtime, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    rt.knowledge.ingest("handbook", [docs])
    before = len(events_of(rt))
    again = rt.knowledge.ingest("handbook", [docs])
    assert (again.admitted, again.superseded, len(again.skipped)) == (0, 0, 3)
    assert {s.reason for s in again.skipped} == {"unchanged since it was last ingested"}
    assert len(events_of(rt)) == before


def test_a_changed_file_supersedes_its_changed_pages_and_keeps_the_rest(rt: Runtime, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    first = rt.knowledge.ingest("handbook", [docs / "deploy.md"])
    kept_id = next(p for p in first.pages if pages_of(rt)[p].title == "Rollback")
    (docs / "deploy.md").write_text(DOCS["deploy.md"].replace("crash-looped", "broke"), encoding="utf-8")
    second = rt.knowledge.ingest("handbook", [docs / "deploy.md"])
    assert (second.admitted, second.superseded) == (1, 1)
    pages = pages_of(rt)
    old = next(p for p in pages.values() if p.title == "Deploy guide" and p.state == "superseded")
    new = pages[second.pages[0]]
    assert old.superseded_by == new.id
    assert new.state == "active"
    assert pages[kept_id].state == "active"
    with rt._internal.store.reader() as reader:
        [(_, source)] = list(reader.items(PAGE_SOURCES))
    assert set(source.pages) == {kept_id, new.id}
    superseded = [e for e in events_of(rt) if isinstance(e, PageSuperseded)]
    assert [e.id for e in superseded] == [old.id]


def test_the_same_text_is_kept_once_per_bank(rt: Runtime, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", {"a.md": "# Same\nidentical text\n", "b.md": "# Same\nidentical text\n"})
    report = rt.knowledge.ingest("handbook", [docs])
    assert report.admitted == 1
    [skip] = report.skipped
    assert skip.reason.startswith("duplicate:")
    assert skip.title == "Same"


def test_files_that_cannot_be_ingested_are_rejected_with_their_reason(rt: Runtime, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Fine\ntext\n", encoding="utf-8")
    (docs / "latin1.md").write_bytes("# Canción\n".encode("latin-1"))
    (docs / "binary.txt").write_bytes(b"abc\x00def")
    (docs / "huge.md").write_bytes(b"# big\n" + b"x" * (8 * 1024 * 1024))
    (docs / "escape.md").write_text("# Title\nsee \x1b[2Jhere\n", encoding="utf-8")
    (docs / ".hidden.md").write_text("# Hidden\nnot taken\n", encoding="utf-8")
    (docs / "code.py").write_text("print('not taken')\n", encoding="utf-8")
    (docs / "link.md").symlink_to(docs / "good.md")
    explicit = tmp_path / "notes.html"
    explicit.write_text("<p>html</p>", encoding="utf-8")
    report = rt.knowledge.ingest("handbook", [docs, explicit])
    reasons = {Path(r.path).name: r.reason for r in report.rejected}
    assert report.admitted == 1
    assert set(reasons) == {"latin1.md", "binary.txt", "huge.md", "escape.md", "link.md", "notes.html"}
    assert "UTF-8" in reasons["latin1.md"]
    assert "NUL" in reasons["binary.txt"]
    assert "limit" in reasons["huge.md"]
    assert "control characters" in reasons["escape.md"]
    assert "symbolic link" in reasons["link.md"]
    assert "Markdown" in reasons["notes.html"]


def test_a_link_named_to_ingest_is_refused_not_followed_to_a_private_file(rt: Runtime, tmp_path: Path):
    private = tmp_path / "private.md"
    private.write_text("# Salaries\nAlice earns a lot\n", encoding="utf-8")
    named = tmp_path / "notes.md"
    named.symlink_to(private)
    report = rt.knowledge.ingest("handbook", [named])
    assert report.admitted == 0
    [rejected] = report.rejected
    assert "symbolic link" in rejected.reason
    assert rt.knowledge.search("handbook", "Salaries") == []


def test_a_path_that_does_not_exist_fails_the_whole_ingest_before_anything_is_written(
    rt: Runtime, tmp_path: Path
) -> None:
    docs = write_docs(tmp_path / "docs")
    before = len(events_of(rt))
    with pytest.raises(IngestInvalid, match="does not exist"):
        rt.knowledge.ingest("handbook", [docs, tmp_path / "missing"])
    with pytest.raises(IngestInvalid):
        rt.knowledge.ingest("handbook", [])
    assert len(events_of(rt)) == before


def test_a_file_name_that_is_not_utf8_is_rejected_not_stored(rt: Runtime, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / os.fsdecode(b"bad\xff.md")).write_text("# T\nbody\n", encoding="utf-8")
    report = rt.knowledge.ingest("handbook", [docs])
    [rejection] = report.rejected
    assert "not valid UTF-8" in rejection.reason
    assert "\\xff" in rejection.path
    assert report.admitted == 0


def test_a_bank_is_used_by_its_owner_only(rt: Runtime, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs")
    with pytest.raises(NotVisible):
        rt.knowledge.ingest("handbook", [docs], principal=Principal(kind="member", name="alice"))
    with pytest.raises(NotVisible):
        rt.knowledge.search("handbook", "deploy", principal=Principal(kind="app", name="deven"))
    assert rt.knowledge.ingest("handbook", [docs], principal=Principal(kind="member", name="deven")).admitted == 6
    assert [b.name for b in rt.knowledge.banks(Principal(kind="member", name="alice"))] == []
    with pytest.raises(UnknownBank):
        rt.knowledge.ingest("nobank", [docs])


def test_bank_owners_are_checked(rt: Runtime) -> None:
    with pytest.raises(UnknownMember):
        rt.knowledge.create_bank("x", owner="member:nobody")
    with pytest.raises(InvalidInput, match="owner"):
        rt.knowledge.create_bank("x", owner="root")
    with pytest.raises(InvalidInput, match="belongs to"):
        rt.knowledge.create_bank("handbook", owner="app:notes")
    assert rt.knowledge.create_bank("handbook", owner="member:deven").owner == "deven"


def test_an_ingest_racing_another_on_the_same_file_is_refused_whole(rt: Runtime, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", {"a.md": "# A\nfirst\n"})
    rt.knowledge.ingest("handbook", [docs])
    with rt._internal.store.reader() as reader:
        [(_, source)] = list(reader.items(PAGE_SOURCES))
    # Another ingest read the file before this one landed: its compare-and-set names the old digest.
    stale = SourceIngested(at=0.0, source=source, previous="0" * 64)
    from resident.messages.store import Commit  # noqa: PLC0415 - loaded only when this runs

    [refusal] = rt._internal.write_each([Commit(events=(stale,))])
    assert refusal is not None
    assert "again meanwhile" in str(refusal)


def test_knowledge_is_refused_while_it_is_off(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home", realm="none") as rt:
        for call in (
            lambda: rt.knowledge.create_bank("x"),
            lambda: rt.knowledge.search("x", "q"),
            rt.knowledge.entries,
            lambda: rt.knowledge.context("deven", "p", "r"),
        ):
            with pytest.raises(KnowledgeDisabled, match=r"\[knowledge\] enabled = true"):
                call()
