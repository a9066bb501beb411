"""Keyword search over a bank: BM25 in three languages, bounded, over a derived index that LMDB rebuilds."""

from __future__ import annotations

import shutil
import stat
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.errors import InvalidInput, TextInvalid
from resident.knowledge.search_index import INDEX_DIR
from resident.store.home import current_store_dir
from tests.knowledge_helpers import admit_copy, killed_ingest, open_knowledge, write_docs


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with open_knowledge(tmp_path / "home") as runtime:
        runtime.knowledge.create_bank("handbook")
        runtime.knowledge.ingest("handbook", [write_docs(tmp_path / "docs")])
        yield runtime


def titles(rt: Runtime, query: str, **options: object) -> list[str]:
    return [hit.title for hit in rt.knowledge.search("handbook", query, **options)]  # type: ignore[arg-type]


def test_english_spanish_and_chinese_queries_find_their_pages(rt: Runtime) -> None:
    assert titles(rt, "database migration")[0] == "Deploy guide"
    # Accents fold both ways: the query without them finds the text with them.
    assert titles(rt, "migracion despliegue")[0] == "Despliegue"
    assert titles(rt, "reversión")[0] == "Reversión"
    # Chinese without spaces: characters and two-character grams.
    assert titles(rt, "迁移数据库")[0] == "部署指南"
    assert titles(rt, "回滚")[0] == "回滚"


def test_a_hit_carries_title_source_score_and_a_snippet_around_the_match(rt: Runtime, tmp_path: Path) -> None:
    [hit, *_] = rt.knowledge.search("handbook", "rollback release")
    assert hit.title == "Rollback"
    assert hit.source == str((tmp_path / "docs" / "deploy.md").resolve())
    assert hit.score > 0
    assert hit.state == "active"
    assert "rollback target" in hit.snippet


def test_searches_are_bounded_and_bad_input_is_refused(rt: Runtime) -> None:
    for k in (0, 101, -1):
        with pytest.raises(InvalidInput, match="k must be"):
            rt.knowledge.search("handbook", "deploy", k)
    with pytest.raises(TextInvalid, match="empty"):
        rt.knowledge.search("handbook", "   ")
    with pytest.raises(TextInvalid, match="limit"):
        rt.knowledge.search("handbook", "x" * 2001)
    with pytest.raises(TextInvalid, match="UTF-8"):
        rt.knowledge.search("handbook", "bad \udcff")
    with pytest.raises(InvalidInput, match="page state"):
        rt.knowledge.search("handbook", "deploy", state="gone")  # type: ignore[arg-type]  # refused at run time
    assert rt.knowledge.search("handbook", "the of and") == []
    assert len(rt.knowledge.search("handbook", "deploy migration rollback 部署 despliegue", 2)) == 2


def test_superseded_pages_are_searched_only_when_asked_for(rt: Runtime, tmp_path: Path) -> None:
    (tmp_path / "docs" / "deploy.md").write_text("# Deploy guide\nShip it on fridays.\n", encoding="utf-8")
    rt.knowledge.ingest("handbook", [tmp_path / "docs"])
    assert "Rollback" not in titles(rt, "rollback release")
    assert titles(rt, "rollback release", state="superseded")[0] == "Rollback"
    assert "Rollback" in titles(rt, "rollback release", state="all")
    assert titles(rt, "fridays") == ["Deploy guide"]


def test_the_index_survives_a_restart_without_a_rebuild(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_knowledge(home) as rt:
        rt.knowledge.create_bank("handbook")
        rt.knowledge.ingest("handbook", [write_docs(tmp_path / "docs")])
    with Runtime.open(home, realm="none") as rt:
        status = rt.knowledge.index_status()
        assert (status.pages, status.rebuilt) == (6, False)
        assert titles(rt, "迁移") == ["部署指南"]


def test_a_missing_or_damaged_index_is_rebuilt_from_lmdb(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_knowledge(home) as rt:
        rt.knowledge.create_bank("handbook")
        rt.knowledge.ingest("handbook", [write_docs(tmp_path / "docs")])
    index = current_store_dir(home) / INDEX_DIR
    shutil.rmtree(index)
    with Runtime.open(home, realm="none") as rt:
        assert rt.knowledge.index_status().rebuilt
        assert titles(rt, "despliegue")[0] == "Despliegue"
    for path in index.iterdir():
        if path.suffix == ".idx" or path.name == "meta.json":
            path.write_bytes(b"garbage")
    with Runtime.open(home, realm="none") as rt:
        assert rt.knowledge.index_status().pages == 6
        assert titles(rt, "database migration")[0] == "Deploy guide"


def test_an_index_of_another_store_is_rebuilt_not_trusted(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    with open_knowledge(first) as rt:
        rt.knowledge.create_bank("handbook")
        rt.knowledge.ingest("handbook", [write_docs(tmp_path / "docs")])
    with open_knowledge(second) as rt:
        rt.knowledge.create_bank("handbook")
        rt.knowledge.ingest("handbook", [write_docs(tmp_path / "other", {"x.md": "# Other\nunrelated words\n"})])
    target = current_store_dir(second) / INDEX_DIR
    shutil.rmtree(target)
    shutil.copytree(current_store_dir(first) / INDEX_DIR, target)
    with Runtime.open(second, realm="none") as rt:
        assert rt.knowledge.index_status().rebuilt
        assert titles(rt, "deploy") == []
        assert titles(rt, "unrelated") == ["Other"]


def test_reindex_rebuilds_the_same_answers(rt: Runtime) -> None:
    before = [(h.id, round(h.score, 4)) for h in rt.knowledge.search("handbook", "deploy migration 部署", 10)]
    status = rt.knowledge.reindex()
    assert (status.pages, status.rebuilt) == (6, True)
    assert [(h.id, round(h.score, 4)) for h in rt.knowledge.search("handbook", "deploy migration 部署", 10)] == before


def test_pages_committed_behind_the_index_are_caught_up_from_the_event_log(rt: Runtime) -> None:
    admit_copy(rt, "rollback release", "second", "page_direct")
    assert [h.id for h in rt.knowledge.search("second", "rollback")] == ["page_direct"]


CRASHING_INGEST = textwrap.dedent(
    """
    import os, signal, sys
    from resident import Runtime
    from resident.messages.knowledge import CatchUpIndex
    rt = Runtime.open(sys.argv[1], realm="none")
    rt.knowledge.create_bank("handbook")
    # Keep the indexer from hearing of the ingest, as if the process died between commit and index.
    rt._internal.wiring.knowledge.tell = lambda message, reply=None: None
    rt._internal.wiring.knowledge.ask = lambda message, timeout=None: None
    report = rt.knowledge.ingest("handbook", [sys.argv[2]])
    print(report.admitted, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_process_killed_after_its_commit_leaves_pages_the_next_start_indexes(tmp_path: Path) -> None:
    home, printed = killed_ingest(tmp_path, CRASHING_INGEST)
    assert printed.strip() == "6"
    with Runtime.open(home, realm="none") as rt:
        assert titles(rt, "迁移数据库")[0] == "部署指南"
        assert rt.knowledge.index_status().pages == 6


def test_the_index_files_are_private_like_the_rest_of_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_knowledge(home) as rt:
        rt.knowledge.create_bank("handbook")
        rt.knowledge.ingest("handbook", [write_docs(tmp_path / "docs")])
        rt.knowledge.reindex()
    index = current_store_dir(home) / INDEX_DIR
    entries = [index, *index.rglob("*")]
    assert len(entries) > 3
    assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in entries} == {
        path.name: 0o700 if path.is_dir() else 0o600 for path in entries
    }


@pytest.mark.parametrize("kind", ["error", "exit"])
def test_a_crashed_indexer_is_restarted_and_answers_searches_again(rt: Runtime, kind: str) -> None:
    before = rt.statistics().child("knowledge").total_restarts
    rt._internal.chaos.crash("knowledge", kind=kind)  # type: ignore[arg-type]
    # Asked right behind the crash: held while the next incarnation reopens the index (its
    # predecessor let go of the index's writer lock when it died), then answered.
    assert titles(rt, "迁移数据库")[0] == "部署指南"
    assert rt.statistics().child("knowledge").total_restarts == before + 1
