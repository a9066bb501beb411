"""The index's batching boundaries: staged documents, commits every few pages, windows of files.

An ingest stages its pages in the index writer window by window and commits once at its end; a
catch-up reads the event log a batch of events at a time and commits after `STAGE_LIMIT` staged
pages. None of these boundaries may change what a search finds or what survives a crash.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from resident import Runtime
from resident.actors import knowledge as indexer_module
from resident.knowledge import tokens
from resident.knowledge.search_index import Cursor, IndexedPage, SearchIndex
from resident.messages.knowledge import CatchUpIndex, IndexStatus, PageSuperseded
from resident.messages.store import Commit
from resident.runtime.knowledge import ingest as knowledge_ingest
from tests.knowledge_helpers import DOCS, admit_copy, killed_ingest, open_knowledge, write_docs


def titles(rt: Runtime, query: str, state: Literal["active", "superseded", "all"] = "active") -> list[str]:
    return [hit.title for hit in rt.knowledge.search("handbook", query, state=state)]


def answers(rt: Runtime) -> list[set[tuple[str, str]]]:
    """Which pages (id, state) a few searches find, to compare one index with another.

    Not their scores: until segments merge, tantivy's BM25 statistics still count the documents a
    change replaced, so an updated index and a rebuilt one score alike pages a little apart.
    """
    return [
        {(hit.id, hit.state) for hit in rt.knowledge.search("handbook", query, 10, state="all")}
        for query in ("deploy migration", "rollback release", "despliegue reversión", "部署 回滚", "fridays")
    ]


@pytest.fixture
def tiny_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """One event per catch-up batch, a commit every two staged pages, one file per ingest window."""
    monkeypatch.setattr(indexer_module, "REBUILD_BATCH", 1)
    monkeypatch.setattr(indexer_module, "STAGE_LIMIT", 2)
    monkeypatch.setattr(knowledge_ingest, "WINDOW_FILES", 1)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with open_knowledge(tmp_path / "home") as runtime:
        runtime.knowledge.create_bank("handbook")
        yield runtime


def test_a_batch_analysed_in_chunks_gives_each_text_the_tokens_it_gets_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [*DOCS.values(), "", "the of and", "Canción " * 40, *DOCS.values()]
    alone = [tokens.token_texts([text])[0] for text in texts]
    monkeypatch.setattr(tokens, "CHUNK_CHARS", 150)  # chunks of one to three texts; one text exceeds it
    assert tokens.token_texts(texts) == alone
    assert alone[3] == alone[4] == ""
    assert len(alone[5].split()) == 40


def test_a_page_staged_then_replaced_before_the_commit_is_indexed_once_in_its_last_state(tmp_path: Path) -> None:
    index = SearchIndex.create(tmp_path / "index")
    try:
        page = IndexedPage(id="page_1", bank="b", state="active", text="rollback release")
        index.stage((), [page])
        index.stage(["page_1"], [IndexedPage(id="page_1", bank="b", state="superseded", text=page.text)])
        assert index.cursor() is None  # nothing staged is visible before the commit
        index.commit(Cursor(seq=7, digest="d"))
        assert index.pages() == 1
        assert index.search("b", "rollback", ("active",), 10) == []
        assert [hit for hit, _ in index.search("b", "rollback", ("superseded",), 10)] == ["page_1"]
        assert index.cursor() == Cursor(seq=7, digest="d")
    finally:
        index.close()


def test_files_whose_pages_straddle_batches_and_commits_are_indexed_as_one_commit_would(
    tmp_path: Path, tiny_batches: None
) -> None:
    docs = write_docs(tmp_path / "docs")
    with open_knowledge(tmp_path / "home") as rt:
        rt.knowledge.create_bank("handbook")
        report = rt.knowledge.ingest("handbook", [docs])
        assert report.admitted == 6
        assert rt.knowledge.index_status().pages == 6
        (docs / "deploy.md").write_text("# Deploy guide\nShip it on fridays.\n", encoding="utf-8")
        assert rt.knowledge.ingest("handbook", [docs]).superseded == 2
        assert titles(rt, "fridays") == ["Deploy guide"]
        assert titles(rt, "rollback release") == []
        assert titles(rt, "rollback release", state="superseded") == ["Rollback"]
        stepwise = answers(rt)
        status = rt.knowledge.reindex()
        assert status.pages == 7  # six, then the new "Deploy guide"
        assert answers(rt) == stepwise


def test_a_page_superseded_while_its_admission_is_staged_is_found_only_as_superseded(rt: Runtime) -> None:
    write_docs(rt.home.parent / "docs", {"deploy.md": DOCS["deploy.md"]})
    rt.knowledge.ingest("handbook", [rt.home.parent / "docs"])
    admit_copy(rt, "rollback release", "second", "page_staged")
    indexer = rt._internal.wiring.knowledge
    assert indexer is not None
    before: IndexStatus = indexer.ask(CatchUpIndex(commit=False))
    rt._internal.write(Commit(events=(PageSuperseded(at=1.0, id="page_staged", by=None),)))
    assert [h.id for h in rt.knowledge.search("second", "rollback", state="superseded")] == ["page_staged"]
    assert rt.knowledge.search("second", "rollback") == []
    after = rt.knowledge.index_status()
    assert after.seq > before.seq
    assert after.pages == before.pages + 1


STAGING_INGEST = textwrap.dedent(
    """
    import os, signal, sys
    from resident import Runtime
    from resident.messages.knowledge import CatchUpIndex
    import time
    rt = Runtime.open(sys.argv[1], realm="none")
    # The indexer's start catches up in the background; once it is ready, nothing commits unless asked.
    deadline = time.monotonic() + 30
    while rt.knowledge.index_status().state != "ready":
        assert time.monotonic() < deadline, "the knowledge index never became ready"
    rt.knowledge.create_bank("handbook")
    # The ingest's closing catch-up only stages: the process dies with its pages in LMDB and
    # their documents handed to the index writer, but no index commit covering them.
    indexer = rt._internal.wiring.knowledge
    ask = indexer.ask
    indexer.ask = lambda message, timeout=None: ask(CatchUpIndex(commit=False), timeout)
    report = rt.knowledge.ingest("handbook", [sys.argv[2]])
    status = ask(CatchUpIndex(commit=False))
    print(report.admitted, status.pages, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_process_killed_with_pages_staged_but_not_committed_indexes_them_at_the_next_start(
    tmp_path: Path,
) -> None:
    home, printed = killed_ingest(tmp_path, STAGING_INGEST)
    assert printed.split() == ["6", "0"]
    with Runtime.open(home, realm="none") as rt:
        status = rt.knowledge.index_status()
        assert (status.pages, status.rebuilt) == (6, False)
        assert titles(rt, "迁移数据库")[0] == "部署指南"
