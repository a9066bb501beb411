"""The knowledge indexer: owns the derived keyword index of pages and answers page searches.

The index (`resident.knowledge.search_index`) is a cache of LMDB that persists between runs. It
is caught up from the event log itself, never from messages: the index remembers the last event it
took in, and before every search (and whenever asked) the indexer reads the events committed
since, indexes the pages they touched, and moves its cursor, all in one index commit. A search
therefore sees every page committed before it was asked, and nothing is lost if a tell is: the
next catch-up reads the log again.

An ingest asks for catch-ups that only *stage* (`CatchUpIndex(commit=False)`): the documents go to
the index writer, whose own thread indexes them while the ingest reads the next files, and the
staged cursor moves in memory only. The next catch-up that commits (the end of the ingest, a
search, a status, or `STAGE_LIMIT` staged pages) commits them with that cursor. One commit per
ingest instead of one per window of files makes fewer, larger segments: less CPU per page in
tantivy (segment serialisation, merges, searcher reloads). A crash loses only staged documents,
never a cursor that covers them, so the next start stages them again.

A page admitted by one of the events read is indexed as its `PageAdmitted` event carries it, which
is what the projection inserted; a page superseded by one of them is re-read from LMDB.

`setup()` only opens the index: nothing it does grows with the home. An index that is missing, of
another format, or whose cursor names an event this store does not hold (a restored or copied
store) is rebuilt from the pages in LMDB, and one that is behind is caught up, both *in the
background*: in steps of `REBUILD_BATCH` pages or `CATCH_UP_EVENTS` events, each a `_Build` message
the indexer tells itself, so the start ping and every request are answered between steps. Until the
index is ready a search is refused with `KnowledgeIndexing` (never a wrong "nothing found"; a
catch-up within `SEARCH_CATCH_UP_STEPS` steps of its end is finished for the search instead), status
says `indexing`, and a catch-up or reindex that asks for an answer gets it once the index is ready.
`Reindex` drops the index and rebuilds it the same way. A crash mid-rebuild leaves an index without
a cursor, which the next start rebuilds again.

A rebuild reads the pages in steps, each its own short read, from the cursor of the log's last
event when it began; the catch-up that follows takes in every event after that cursor. A page
admitted meanwhile may then be read by a later step and also admitted by an event the catch-up
reads, so events up to the end of the rebuild (`_overlap`) replace their admitted pages rather than
add them.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from resident.errors import ActorUnavailable, KnowledgeIndexing
from resident.knowledge.search_index import INDEX_DIR, Cursor, IndexedPage, SearchIndex
from resident.messages.events import AnyEvent, encode_event
from resident.messages.knowledge import (
    CatchUpIndex,
    GetIndexStatus,
    IndexStatus,
    Page,
    PageAdmitted,
    PageHit,
    PagesFound,
    PageSuperseded,
    Reindex,
    SearchPages,
)
from resident.store.store import Reader, Store
from resident.store.tables import PAGES
from resident.supervisor import ChildContext, Reply, SupervisedActor, settle_all

__all__ = ["CATCH_UP_EVENTS", "REBUILD_BATCH", "STAGE_LIMIT", "KnowledgeIndexer"]

logger = logging.getLogger(__name__)

# Pages handed to the index per commit during a rebuild, and events read per catch-up batch:
# few commits, bounded memory. (The analysis works through a batch in chunks of its own size,
# `resident.knowledge.tokens.CHUNK_CHARS`, so a large batch costs no more per page than a small one.)
REBUILD_BATCH = 20_000
# Staged pages after which a catch-up commits even if not asked to: bounds what a crash makes the
# next start index again, and how much the writer holds beyond its memory budget's segments.
STAGE_LIMIT = 20_000
# Events read per catch-up batch at most, pages or not: bounds one step of a catch-up in a home
# whose log is mostly memory events.
CATCH_UP_EVENTS = 50_000
# Steps of a background catch-up a search may take itself before it is refused as indexing.
SEARCH_CATCH_UP_STEPS = 2


@dataclass(frozen=True, slots=True)
class _Build:
    """Take the next step of the rebuild or catch-up in progress (told by the indexer to itself)."""


def _event_digest(event: AnyEvent) -> str:
    return hashlib.sha256(encode_event(event)).hexdigest()


def _indexed(page: Page) -> IndexedPage:
    return IndexedPage(id=page.id, bank=page.bank, state=page.state, text=f"{page.title}\n{page.body}")


class KnowledgeIndexer(SupervisedActor):
    """The derived page index of one home: catch-up from the event log, rebuild, search."""

    def __init__(self, context: ChildContext, store: Store, threads: int = 1) -> None:
        super().__init__(context)
        self.store = store
        self._threads = threads
        self._index: SearchIndex | None = None
        # The committed cursor, and the last event staged beyond it (None: nothing staged).
        self._cursor = Cursor(seq=0, digest="")
        self._staged: Cursor | None = None
        self._staged_pages = 0
        self._rebuilt = False
        self._rebuild_seconds = 0.0
        # The work in progress before the index is ready (None: ready), and where it stands.
        self._building: Literal["rebuild", "catch_up"] | None = None
        self._rebuild_from: Cursor = self._cursor
        self._rebuild_after: str | None = None
        self._rebuild_started = 0.0
        self._overlap = 0
        # Callers of a catch-up or reindex, answered once the index is ready.
        self._waiting: list[Reply] = []

    # -- life cycle -------------------------------------------------------------------------------

    def setup(self) -> None:
        index, created = SearchIndex.open(self.store.path, threads=self._threads)
        self._index = index
        cursor = None if created else index.cursor()
        if cursor is None or not self._holds(cursor):
            self._start_rebuild()
            return
        self._cursor = cursor
        self._start_catch_up()

    def teardown(self) -> None:
        self._release("the knowledge indexer stopped before the index was ready; the runtime is closing")
        self._close()

    def on_crash(self, error: BaseException) -> None:
        self._release(f"the knowledge indexer restarted ({type(error).__name__}); ask again")
        self._close()

    def _release(self, why: str) -> None:
        waiting, self._waiting = self._waiting, []
        settle_all((reply, None, ActorUnavailable(why)) for reply in waiting)

    def _close(self) -> None:
        # Staged documents go with the writer; the committed cursor still precedes them.
        self._staged, self._staged_pages = None, 0
        index, self._index = self._index, None
        if index is not None:
            index.close()

    def _require_index(self) -> SearchIndex:
        if self._index is None:
            raise RuntimeError("the knowledge index is not open")
        return self._index

    # -- messages ---------------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        match message:
            case SearchPages():
                return self._search(message)
            case CatchUpIndex(commit=commit):
                return self._asked_to_catch_up(commit=commit)
            case Reindex():
                self._start_rebuild()
                self._answer_when_ready()
            case GetIndexStatus():
                if self._building is None:
                    self._commit()
                return self._status()
            case _Build():
                self._build_step()
            case _:
                return super().handle(message)
        return None

    def _search(self, message: SearchPages) -> PagesFound:
        # A catch-up a few steps from its end (the usual one: a process stopped after its last
        # commit) is finished for the search, as a ready index catches up before each search.
        for _ in range(SEARCH_CATCH_UP_STEPS):
            if self._building == "catch_up":
                self._catch_up_step()
        if self._building is not None:
            raise KnowledgeIndexing(
                f"the knowledge index is being built ({self._progress()}); search again shortly "
                "(`resident knowledge status` says when it is ready)"
            )
        self._catch_up()
        hits = self._require_index().search(message.bank, message.query, message.states, message.k)
        return PagesFound(hits=tuple(PageHit(id=page, score=score) for page, score in hits), seq=self._cursor.seq)

    def _asked_to_catch_up(self, *, commit: bool) -> IndexStatus | None:
        if self._building is None:
            self._catch_up(commit=commit)
            return self._status()
        # The build in progress reaches every event committed before this request.
        self._answer_when_ready()
        return None

    def _answer_when_ready(self) -> None:
        reply = self.defer()
        if reply is not None:
            self._waiting.append(reply)

    def _progress(self) -> str:
        if self._building == "rebuild":
            return f"{self._require_index().pages()} pages indexed so far"
        return f"caught up to event {(self._staged or self._cursor).seq}"

    def _status(self) -> IndexStatus:
        return IndexStatus(
            pages=self._require_index().pages(), seq=self._cursor.seq, rebuilt=self._rebuilt,
            rebuild_seconds=self._rebuild_seconds, state="ready" if self._building is None else "indexing",
        )

    # -- building in the background ---------------------------------------------------------------

    def _start_rebuild(self) -> None:
        """Drop the index and rebuild it from every page in LMDB, a step at a time."""
        self._rebuild_started = time.perf_counter()
        self._close()  # drops whatever was staged: the rebuild reads every page
        self._index = SearchIndex.create(self.store.path / INDEX_DIR, threads=self._threads)
        with self.store.reader() as reader:
            self._rebuild_from = self._last_event(reader)
        self._rebuild_after = None
        self._begin("rebuild")

    def _start_catch_up(self) -> None:
        self._begin("catch_up")

    def _begin(self, work: Literal["rebuild", "catch_up"]) -> None:
        already = self._building is not None
        self._building = work
        if not already:
            self.actor_ref.tell(_Build())

    def _build_step(self) -> None:
        if self._building == "rebuild":
            self._rebuild_step()
        elif self._building == "catch_up":
            self._catch_up_step()
        if self._building is not None:
            self.actor_ref.tell(_Build())

    def _rebuild_step(self) -> None:
        """Index the next `REBUILD_BATCH` pages; after the last, commit the cursor and catch up from it."""
        index = self._require_index()
        with self.store.reader() as reader:
            rows = reader.items_after(PAGES, self._rebuild_after, REBUILD_BATCH)
            last = self._last_event(reader)
        batch = [_indexed(page) for _, page in rows]
        if len(rows) == REBUILD_BATCH:
            index.apply((), batch, None)
            self._rebuild_after = rows[-1][0]
            return
        index.apply((), batch, self._rebuild_from)
        self._cursor = self._rebuild_from
        self._overlap = last.seq
        self._rebuilt = True
        self._building = "catch_up"

    def _catch_up_step(self) -> None:
        if self._stage_batch():
            if self._staged_pages >= STAGE_LIMIT:
                self._commit()
            return
        self._commit()
        self._building = None
        if self._rebuilt and self._rebuild_started:
            self._rebuild_seconds = time.perf_counter() - self._rebuild_started
            self._rebuild_started = 0.0
            logger.info("knowledge index rebuilt: %d pages in %.2f s", self._require_index().pages(),
                        self._rebuild_seconds)
        waiting, self._waiting = self._waiting, []
        status = self._status()
        settle_all((reply, status, None) for reply in waiting)

    # -- catching up ------------------------------------------------------------------------------

    def _holds(self, cursor: Cursor) -> bool:
        """Whether this store's event log has, at the cursor, the very event the index took in last."""
        if cursor.seq == 0:
            return not cursor.digest
        with self.store.reader() as reader:
            for seq, event in reader.events(since=cursor.seq):
                return seq == cursor.seq and _event_digest(event) == cursor.digest
        return False

    def _catch_up(self, *, commit: bool = True) -> None:
        """Take in every event committed so far, a batch of pages at a time; commit unless told not to."""
        while self._stage_batch():
            if self._staged_pages >= STAGE_LIMIT:
                self._commit()
        if commit:
            self._commit()

    def _commit(self) -> None:
        """Commit the staged documents with the staged cursor (nothing to do if nothing is staged)."""
        if self._staged is None:
            return
        self._require_index().commit(self._staged)
        self._cursor, self._staged, self._staged_pages = self._staged, None, 0

    def _stage_batch(self) -> bool:
        """Stage the pages of the next events (up to `REBUILD_BATCH` pages, `CATCH_UP_EVENTS` events); any?"""
        index = self._require_index()
        admitted: dict[str, Page] = {}
        changed: set[str] = set()
        first = (self._staged or self._cursor).seq + 1
        last: tuple[int, AnyEvent] | None = None
        with self.store.reader() as reader:
            for read, (seq, event) in enumerate(reader.events(since=first), start=1):
                last = (seq, event)
                match event:
                    case PageAdmitted(page=page):
                        admitted[page.id] = page
                    case PageSuperseded(id=page_id):
                        changed.add(page_id)
                    case _:
                        pass
                if len(admitted) + len(changed) >= REBUILD_BATCH or read >= CATCH_UP_EVENTS:
                    break
            if last is None:
                return False
            reread = (reader.get(PAGES, page_id) for page_id in changed)
            pages = [page for page in reread if page is not None]
        pages += [page for page_id, page in admitted.items() if page_id not in changed]
        pages.sort(key=lambda page: page.id)
        # A page admitted after the cursor is not in the index yet, even if changed since: only
        # pages the index may already hold are replaced (see `SearchIndex.stage`). Right after a
        # rebuild, one admitted before its end may be there already (read by a later step).
        replaced = changed | admitted.keys() if first <= self._overlap else changed - admitted.keys()
        index.stage(replaced, [_indexed(page) for page in pages])
        self._staged = Cursor(seq=last[0], digest=_event_digest(last[1]))
        self._staged_pages += len(pages)
        return True

    @staticmethod
    def _last_event(reader: Reader) -> Cursor:
        last = reader.last_event()
        return Cursor(seq=0, digest="") if last is None else Cursor(seq=last[0], digest=_event_digest(last[1]))
