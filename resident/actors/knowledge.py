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

`setup()` opens the index before the first request is handled (the address holds requests
meanwhile). An index that is missing, of another format, or whose cursor names an event this store
does not hold (a restored or copied store) is rebuilt from the pages in LMDB; so is one that
`Reindex` asks to drop. A crash mid-rebuild leaves an index without a cursor, which the next start
rebuilds again.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

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
from resident.supervisor import ChildContext, SupervisedActor

__all__ = ["REBUILD_BATCH", "STAGE_LIMIT", "KnowledgeIndexer"]

logger = logging.getLogger(__name__)

# Pages handed to the index per commit during a rebuild, and events read per catch-up batch:
# few commits, bounded memory. (The analysis works through a batch in chunks of its own size,
# `resident.knowledge.tokens.CHUNK_CHARS`, so a large batch costs no more per page than a small one.)
REBUILD_BATCH = 20_000
# Staged pages after which a catch-up commits even if not asked to: bounds what a crash makes the
# next start index again, and how much the writer holds beyond its memory budget's segments.
STAGE_LIMIT = 20_000


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

    # -- life cycle -------------------------------------------------------------------------------

    def setup(self) -> None:
        index, created = SearchIndex.open(self.store.path, threads=self._threads)
        self._index = index
        cursor = None if created else index.cursor()
        if cursor is None or not self._holds(cursor):
            self._rebuild()
            return
        self._cursor = cursor
        self._catch_up()

    def teardown(self) -> None:
        self._close()

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - the cause is already logged
        self._close()

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
                self._catch_up(commit=commit)
                return self._status()
            case Reindex():
                self._rebuild()
                return self._status()
            case GetIndexStatus():
                self._commit()
                return self._status()
            case _:
                return super().handle(message)

    def _search(self, message: SearchPages) -> PagesFound:
        self._catch_up()
        hits = self._require_index().search(message.bank, message.query, message.states, message.k)
        return PagesFound(hits=tuple(PageHit(id=page, score=score) for page, score in hits), seq=self._cursor.seq)

    def _status(self) -> IndexStatus:
        return IndexStatus(
            pages=self._require_index().pages(), seq=self._cursor.seq, rebuilt=self._rebuilt,
            rebuild_seconds=self._rebuild_seconds,
        )

    # -- catching up and rebuilding ---------------------------------------------------------------

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
        """Stage the pages of the next events (up to `REBUILD_BATCH` of them); whether there were any."""
        index = self._require_index()
        admitted: dict[str, Page] = {}
        changed: set[str] = set()
        last: tuple[int, AnyEvent] | None = None
        with self.store.reader() as reader:
            for seq, event in reader.events(since=(self._staged or self._cursor).seq + 1):
                last = (seq, event)
                match event:
                    case PageAdmitted(page=page):
                        admitted[page.id] = page
                    case PageSuperseded(id=page_id):
                        changed.add(page_id)
                    case _:
                        pass
                if len(admitted) + len(changed) >= REBUILD_BATCH:
                    break
            if last is None:
                return False
            reread = (reader.get(PAGES, page_id) for page_id in changed)
            pages = [page for page in reread if page is not None]
        pages += [page for page_id, page in admitted.items() if page_id not in changed]
        pages.sort(key=lambda page: page.id)
        # A page admitted after the cursor is not in the index yet, even if changed since: only
        # pages the index may already hold are replaced (see `SearchIndex.stage`).
        index.stage(changed - admitted.keys(), [_indexed(page) for page in pages])
        self._staged = Cursor(seq=last[0], digest=_event_digest(last[1]))
        self._staged_pages += len(pages)
        return True

    def _rebuild(self) -> None:
        """A fresh index of every page in LMDB, its cursor written only with the last batch."""
        started = time.perf_counter()
        self._close()  # drops whatever was staged: the rebuild reads every page
        index = SearchIndex.create(self.store.path / INDEX_DIR, threads=self._threads)
        self._index = index
        with self.store.reader() as reader:
            cursor = self._last_event(reader)
            batch: list[IndexedPage] = []
            for _, page in reader.items(PAGES):
                batch.append(_indexed(page))
                if len(batch) >= REBUILD_BATCH:
                    index.apply((), batch, None)
                    batch = []
        index.apply((), batch, cursor)
        self._cursor = cursor
        self._rebuilt = True
        self._rebuild_seconds = time.perf_counter() - started
        logger.info("knowledge index rebuilt: %d pages in %.2f s", index.pages(), self._rebuild_seconds)

    @staticmethod
    def _last_event(reader: Reader) -> Cursor:
        last = reader.last_event()
        return Cursor(seq=0, digest="") if last is None else Cursor(seq=last[0], digest=_event_digest(last[1]))
