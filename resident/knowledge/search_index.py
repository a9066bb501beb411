"""The derived keyword index of pages: a tantivy index beside the LMDB store, fed memory's analysis.

LMDB is the truth; this index is a cache of it that survives restarts. It lives in the store's own
directory (`store.N/knowledge-index/`), so a restore, which switches to a new store directory,
starts from no index and builds one from the restored pages. Besides one document per page (its
id, bank, state and analysed text), the index holds one *cursor* document: the sequence number of
the last event it has taken in and that event's digest. The cursor is written in the same tantivy
commit as the page changes it covers, so after a crash the index is exactly as of some event, and
catching up replays the events after it. The digest tells an index from another store's apart:
if the event under the cursor is not the one it names, the index is rebuilt.

Why tantivy (see `bench/RESULTS.md`, "Knowledge"): at 100k pages it answers BM25 queries in a few
milliseconds with a flat tail thanks to block-max pruning, and opens in milliseconds because its
segments are memory-mapped files; the in-memory numpy index memory recall uses would have to be
rebuilt from LMDB by every process that opens the home (seconds to tens of seconds at 100k pages),
and FTS5 and an LMDB posting table were ten times slower or more to search.

This is the knowledge domain's one I/O adapter (a derived file); it knows nothing of LMDB.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

from resident.knowledge.tokens import query_tokens, token_texts
from resident.memory.stored_terms import TERMS_TAG
from resident.messages.knowledge import PageState

__all__ = ["INDEX_DIR", "Cursor", "IndexedPage", "SearchIndex"]

INDEX_DIR = "knowledge-index"
# Bump the first number when the schema changes; the analysis tag changes with memory's analysis.
FORMAT = f"resident-knowledge-index 3 {TERMS_TAG.decode('ascii')}\n"
_FORMAT_FILE = "FORMAT"
_CURSOR = "cursor"
_PAGE = "page"
_WRITER_HEAP = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Cursor:
    """The last event the index has taken in, and the SHA-256 of that event's stored bytes."""

    seq: int
    digest: str


@dataclass(frozen=True, slots=True)
class IndexedPage:
    """What the index keeps of a page (its text is analysed, not stored)."""

    id: str
    bank: str
    state: PageState
    text: str


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("kind", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("page", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("bank", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("state", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("tokens", tokenizer_name="whitespace", index_option="freq")
    builder.add_unsigned_field("seq", stored=True)
    builder.add_text_field("event", stored=True, tokenizer_name="raw", index_option="basic")
    return builder.build()


class SearchIndex:
    """One open index directory: its writer (this process holds the only one) and a searcher."""

    def __init__(self, path: Path, *, threads: int = 1) -> None:
        self.path = path
        self._schema = _schema()
        self._index = tantivy.Index(self._schema, path=str(path), reuse=True)
        self._writer: tantivy.IndexWriter | None = self._index.writer(_WRITER_HEAP, threads)
        self._searcher = self._index.searcher()
        self._private()

    @classmethod
    def open(cls, store_dir: Path, *, threads: int = 1) -> tuple[SearchIndex, bool]:
        """The index of the store in `store_dir`, and whether it had to be created empty.

        An index of another format (or a damaged one that will not open) is discarded.
        """
        path = store_dir / INDEX_DIR
        marker = path / _FORMAT_FILE
        try:
            current = marker.read_text(encoding="utf-8") == FORMAT
        except (FileNotFoundError, UnicodeDecodeError):
            current = False
        if current:
            try:
                return cls(path, threads=threads), False
            except (OSError, ValueError):
                current = False
        return cls.create(path, threads=threads), True

    @classmethod
    def create(cls, path: Path, *, threads: int = 1) -> SearchIndex:
        """An empty index at `path`, replacing whatever was there."""
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(mode=0o700, parents=True)
        index = cls(path, threads=threads)
        marker = path / _FORMAT_FILE
        marker.write_text(FORMAT, encoding="utf-8")
        marker.chmod(0o600)
        return index

    def close(self) -> None:
        """Release the writer (and its lock); waits for merges in progress."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.wait_merging_threads()
            self._private()  # merges may have written segments since the last commit

    # -- reading ----------------------------------------------------------------------------------

    def cursor(self) -> Cursor | None:
        """The cursor document, if the index has one."""
        query = tantivy.Query.term_query(self._schema, "kind", _CURSOR)
        hits = self._searcher.search(query, 1).hits
        if not hits:
            return None
        document = self._searcher.doc(hits[0][1])
        return Cursor(seq=int(document["seq"][0]), digest=str(document["event"][0]))

    def pages(self) -> int:
        """How many pages are indexed."""
        return int(self._searcher.num_docs) - (1 if self.cursor() is not None else 0)

    def search(self, bank: str, query: str, states: Sequence[PageState], k: int) -> list[tuple[str, float]]:
        """The `k` best `(page id, BM25 score)` of `bank` in `states` for `query`, best first.

        Bank and state filter before ranking (they score nothing), so pages outside them can never
        push a matching one out of the top `k`.
        """
        tokens = query_tokens(query)
        if not tokens or k <= 0 or not states:
            return []
        query_type, occur = tantivy.Query, tantivy.Occur
        terms = query_type.boolean_query(
            [(occur.Should, query_type.term_query(self._schema, "tokens", token)) for token in tokens]
        )
        in_states = query_type.boolean_query(
            [(occur.Should, query_type.term_query(self._schema, "state", state)) for state in states]
        )
        filtered = query_type.boolean_query([
            (occur.Must, terms),
            (occur.Must, query_type.const_score_query(query_type.term_query(self._schema, "bank", bank), 0.0)),
            (occur.Must, query_type.const_score_query(in_states, 0.0)),
        ])
        searcher = self._searcher
        return [
            (str(searcher.doc(address)["page"][0]), float(score))
            for score, address in searcher.search(filtered, k, count=False).hits
        ]

    # -- writing ----------------------------------------------------------------------------------

    def apply(self, replaced: Iterable[str], pages: Sequence[IndexedPage], cursor: Cursor | None) -> None:
        """`stage` then `commit`: the pages' documents and the cursor in one commit."""
        self.stage(replaced, pages)
        self.commit(cursor)

    def stage(self, replaced: Iterable[str], pages: Sequence[IndexedPage]) -> None:
        """Drop the documents of the pages `replaced` and hand `pages` to the writer, without committing.

        The writer's own thread indexes them meanwhile; nothing staged is visible to a search or
        survives a crash until `commit`. A page not in `replaced` must be new to the index, staged
        documents included. That holds for every page admitted after the committed or staged
        cursor, because the cursor moves in the same commit as the documents it covers: an index
        never holds a page whose admission lies beyond its cursor. (Deleting every page first
        would be simpler, and cost a term lookup per page in every segment.) A delete applies to
        documents staged before it, so a page staged and then changed is replaced, not doubled.
        """
        writer = self._require_writer()
        for page_id in set(replaced):
            writer.delete_documents_by_term("page", page_id)
        for page, tokens in zip(pages, token_texts([page.text for page in pages]), strict=True):
            document = tantivy.Document()
            document.add_text("kind", _PAGE)
            document.add_text("page", page.id)
            document.add_text("bank", page.bank)
            document.add_text("state", page.state)
            document.add_text("tokens", tokens)
            writer.add_document(document)

    def commit(self, cursor: Cursor | None) -> None:
        """Commit what was staged with `cursor` as the index's cursor, then reload the searcher.

        A `None` cursor removes it: the batches of a rebuild before its last leave the index unfinished.
        """
        writer = self._require_writer()
        writer.delete_documents_by_term("kind", _CURSOR)
        if cursor is not None:
            marker = tantivy.Document()
            marker.add_text("kind", _CURSOR)
            marker.add_unsigned("seq", cursor.seq)
            marker.add_text("event", cursor.digest)
            writer.add_document(marker)
        writer.commit()
        self._index.reload()
        self._searcher = self._index.searcher()
        self._private()

    def _require_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            raise RuntimeError(f"the knowledge index at {self.path} is closed")
        return self._writer

    def _private(self) -> None:
        # The home is 0700 already; its data files are 0600 too, tantivy's segments included.
        for entry in self.path.iterdir():
            with contextlib.suppress(FileNotFoundError):
                entry.chmod(0o600)
