"""The knowledge indexer's start never waits on the home's size; until its index is ready, a search says so.

A home whose index must be rebuilt (missing here; stale or of another format alike) opens within a
start timeout made small, with the rebuild held after its first step by the test's clock, which
stands for a home too big to index in that time. Meanwhile the status says `indexing`, a search is
refused with `KnowledgeIndexing` (a 503 over HTTP) rather than answered from half an index, and a
catch-up asked for is answered once the index is ready, which then finds the pages the held steps
had not reached.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from resident.actors import knowledge as knowledge_module
from resident.actors.knowledge import KnowledgeIndexer, _Build
from resident.api.statuses import status_of
from resident.clock import ManualClock
from resident.errors import KnowledgeIndexing
from resident.knowledge.search_index import INDEX_DIR
from resident.messages.knowledge import CatchUpIndex
from resident.runtime import wiring
from resident.store.home import current_store_dir
from resident.supervisor import ChildSpec
from tests.knowledge_helpers import open_knowledge, write_docs
from tests.replication_support import wait_until

pytestmark = pytest.mark.timeout(60)

WORDS = ("harbour", "lantern", "meadow", "orchard", "quarry", "saddle", "thimble", "walnut", "anchor", "barley",
         "canyon", "dagger")


def home_without_its_index(tmp_path: Path) -> Path:
    """A home of a dozen pages, one a word, whose knowledge index is gone (the next start rebuilds it)."""
    home = tmp_path / "home"
    docs = {f"{word}.md": f"# About the {word}\n\nThis page is about the {word} and nothing else.\n" for word in WORDS}
    with open_knowledge(home) as rt:
        rt.knowledge.create_bank("handbook")
        rt.knowledge.ingest("handbook", [write_docs(tmp_path / "docs", docs)])
        assert rt.knowledge.index_status().pages == len(WORDS)
    shutil.rmtree(current_store_dir(home) / INDEX_DIR)
    return home


def small_knowledge_start(address: Any, *args: Any, **kwargs: Any) -> ChildSpec:
    if address.name == "knowledge":
        kwargs["start_timeout"] = 1.0
    return ChildSpec(address, *args, **kwargs)


def test_a_home_whose_index_is_rebuilt_opens_at_once_and_searches_say_indexing_until_it_is_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = home_without_its_index(tmp_path)
    monkeypatch.setattr(knowledge_module, "REBUILD_BATCH", 5)
    monkeypatch.setattr(wiring, "ChildSpec", small_knowledge_start)
    build_step = KnowledgeIndexer._build_step
    held: list[str | None] = []

    def slow_rebuild(indexer: KnowledgeIndexer) -> None:
        # Every rebuild step after the first waits for the clock: the rebuild outlasts the start.
        after = indexer._rebuild_after
        if indexer._building == "rebuild" and after is not None and after not in held:
            held.append(after)
            indexer.schedule(60.0, _Build())
            return
        build_step(indexer)

    monkeypatch.setattr(KnowledgeIndexer, "_build_step", slow_rebuild)
    clock = ManualClock()
    with open_knowledge(home, clock=clock) as rt:
        wait_until(lambda: held, 10.0, "the first rebuild step")
        status = rt.knowledge.index_status()
        assert (status.state, status.pages) == ("indexing", 5)
        with pytest.raises(KnowledgeIndexing, match="being built") as refused:
            rt.knowledge.search("handbook", WORDS[-1], 5)
        assert status_of(refused.value) == 503
        # A catch-up asked for meanwhile (an ingest's last one) is answered once the index is ready.
        indexer = rt._internal.wiring.knowledge
        assert indexer is not None
        with ThreadPoolExecutor(1) as pool:
            caught_up = pool.submit(indexer.ask, CatchUpIndex(), 30.0)
            assert rt.knowledge.index_status().state == "indexing"
            assert not caught_up.done()  # the rebuild is held: nothing can answer it yet
            while rt.knowledge.index_status().state == "indexing":
                clock.advance(60.0)
            assert caught_up.result(10.0).pages == len(WORDS)
        for word in WORDS:
            [hit] = rt.knowledge.search("handbook", word, 5)
            assert word in hit.title.lower()


def test_a_home_whose_index_lags_its_log_opens_at_once_and_catches_up_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index as it stood after the first half of the pages, the log holding both halves: the
    # next start must take in the second half, which stands for a log too long to read in the
    # (small) start timeout: every catch-up step after the first waits for the test's clock.
    home = tmp_path / "home"
    first, second = WORDS[:6], WORDS[6:]
    index = current_store_dir(home) / INDEX_DIR
    saved = tmp_path / "index-after-the-first-half"
    for number, words in enumerate((first, second)):
        with open_knowledge(home) as rt:
            if number == 0:
                rt.knowledge.create_bank("handbook")
            docs = {f"{word}.md": f"# About the {word}\n\nThis page is about the {word}.\n" for word in words}
            rt.knowledge.ingest("handbook", [write_docs(tmp_path / f"docs{number}", docs)])
        if number == 0:
            shutil.copytree(index, saved)
    shutil.rmtree(index)
    shutil.copytree(saved, index)
    monkeypatch.setattr(knowledge_module, "CATCH_UP_EVENTS", 1)
    monkeypatch.setattr(knowledge_module, "SEARCH_CATCH_UP_STEPS", 0)
    monkeypatch.setattr(wiring, "ChildSpec", small_knowledge_start)
    build_step = KnowledgeIndexer._build_step
    held: list[int] = []

    def slow_catch_up(indexer: KnowledgeIndexer) -> None:
        # The first step runs; each later one waits for the clock once: the catch-up outlasts the start.
        at = (indexer._staged or indexer._cursor).seq
        if indexer._building == "catch_up" and at not in held:
            held.append(at)
            if len(held) > 1:
                indexer.schedule(60.0, _Build())
                return
        build_step(indexer)

    monkeypatch.setattr(KnowledgeIndexer, "_build_step", slow_catch_up)
    clock = ManualClock()
    with open_knowledge(home, clock=clock) as rt:
        wait_until(lambda: len(held) > 1, 10.0, "the first catch-up step")
        assert rt.knowledge.index_status().state == "indexing"
        with pytest.raises(KnowledgeIndexing, match="being built"):
            rt.knowledge.search("handbook", second[-1], 5)
        while rt.knowledge.index_status().state == "indexing":
            clock.advance(60.0)
        assert rt.knowledge.index_status().pages == len(WORDS)
        for word in WORDS:
            [hit] = rt.knowledge.search("handbook", word, 5)
            assert word in hit.title.lower()
