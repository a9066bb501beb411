"""Knowledge: banks of pages with their sources, verified entries with their evidence, and events.

Two families share this module. The **knowledge base** holds banks (owned by a member, an app or a
workspace) of pages that only ingest creates: each page carries its source identity (the file's
path and SHA-256) and its own content digest. **Verified knowledge** holds entries that belong to a
project and a repository; an entry is born `candidate` from an implementation step and becomes
`verified` only through the acceptance gate. Every state change of either is one of the events
below, written in the same transaction as the change.
"""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Event, Message, Record

__all__ = [
    "DEFAULT_CONTEXT_K",
    "ENTRY_KINDS",
    "ENTRY_STATES",
    "ENTRY_TRANSITIONS",
    "MAX_CONTEXT_K",
    "MAX_SEARCH_K",
    "PAGE_STATES",
    "CatchUpIndex",
    "ContextEntry",
    "Dependency",
    "DigestRef",
    "EntryImported",
    "EntryKind",
    "EntryProposed",
    "EntryRevalidated",
    "EntrySource",
    "EntryStaled",
    "EntryState",
    "EntrySuperseded",
    "EntryVerified",
    "EvidenceRef",
    "GetIndexStatus",
    "IndexStatus",
    "IngestReport",
    "KnowledgeBank",
    "KnowledgeBankCreated",
    "KnowledgeEntry",
    "OwnerKind",
    "Page",
    "PageAdmitted",
    "PageHit",
    "PageKind",
    "PageSource",
    "PageState",
    "PageSuperseded",
    "PagesFound",
    "Reindex",
    "Rejection",
    "Repository",
    "RepositoryRegistered",
    "SearchHit",
    "SearchPages",
    "Skip",
    "SourceIngested",
    "SourceRecord",
    "Visibility",
]

# A search answers at most this many pages; context preparation hands out 20 entries, at most 100.
MAX_SEARCH_K = 100
DEFAULT_CONTEXT_K = 20
MAX_CONTEXT_K = 100

OwnerKind = Literal["member", "app", "workspace"]
PageKind = Literal["markdown", "text"]
PageState = Literal["active", "superseded"]
PAGE_STATES: tuple[PageState, ...] = ("active", "superseded")
EntryKind = Literal["decision", "convention", "solution", "hypothesis", "fact"]
ENTRY_KINDS: tuple[EntryKind, ...] = ("decision", "convention", "solution", "hypothesis", "fact")
EntryState = Literal["candidate", "verified", "stale", "superseded", "legacy_unverified"]
ENTRY_STATES: tuple[EntryState, ...] = ("candidate", "verified", "stale", "superseded", "legacy_unverified")
# An entry's lifecycle (see resident.knowledge.lifecycle): the states each may move to. The writer's
# projection refuses any other move, so this table is the one the store enforces.
ENTRY_TRANSITIONS: dict[EntryState, frozenset[EntryState]] = {
    "candidate": frozenset({"verified", "stale"}),
    "verified": frozenset({"stale", "superseded"}),
    "stale": frozenset(),
    "superseded": frozenset(),
    "legacy_unverified": frozenset(),
}
Visibility = Literal["private", "project"]


# -- the knowledge base --------------------------------------------------------------------------


class KnowledgeBank(Record, frozen=True):
    """A named container of pages, owned by one member, app or workspace (who alone may use it)."""

    name: str
    owner_kind: OwnerKind
    owner: str
    created_at: float


class PageSource(Record, frozen=True):
    """Where a page came from: the file's resolved path and the SHA-256 of its bytes when ingested."""

    path: str
    sha256: str


class Page(Record, frozen=True):
    """One typed unit of knowledge: a section of a document, admitted whole by the ingest gate.

    `digest` is the SHA-256 of the page's kind, title and body: two pages with one digest say the
    same thing, so a bank keeps one of them. `ordinal` is the page's place in its source.
    """

    id: str
    bank: str
    kind: PageKind
    title: str
    body: str
    digest: str
    source: PageSource
    ordinal: int
    admitted_at: float
    state: PageState = "active"
    superseded_by: str | None = None
    superseded_at: float | None = None


class SourceRecord(Record, frozen=True):
    """The last ingest of one file into one bank: its digest then, and the pages it has there."""

    bank: str
    path: str
    sha256: str
    pages: tuple[str, ...]
    ingested_at: float


class DigestRef(Record, frozen=True):
    """The page of a bank that holds a given content digest (the dedupe lookup)."""

    page: str


# -- verified knowledge --------------------------------------------------------------------------


class Repository(Record, frozen=True):
    """A repository knowledge may be about: its project, where its work tree is, and who may read.

    The work tree is what context preparation's probe reads to check an entry's file sources;
    only files inside it are ever read. `members` are the members authorized for the project
    through this repository.
    """

    id: str
    project: str
    path: str
    members: tuple[str, ...]
    registered_at: float


class EntrySource(Record, frozen=True):
    """A source with identity: a file of the repository, a URL, or the execution that proposed it."""

    kind: Literal["file", "url", "execution"]
    ref: str
    digest: str


class Dependency(Record, frozen=True):
    """Something an entry stays true only as long as: a file's content, another entry, a provider.

    A `file` dependency holds the file's SHA-256 when the entry was made; an `entry` one the other
    entry's version (`generation`); a `provider` one the model provider and generation that wrote it.
    """

    kind: Literal["file", "entry", "provider"]
    ref: str
    digest: str = ""
    generation: str = ""
    provider: str = ""


class EvidenceRef(Record, frozen=True):
    """One execution record the acceptance gate relied on, with the seal it had then."""

    execution: str
    role: str
    seal: str


class KnowledgeEntry(Record, frozen=True):
    """A piece of verified knowledge (or a candidate for it) about one project and repository.

    `version` grows by one at every transition; writes that depend on a state read carry the
    version they read (compare-and-set). `checked_at` is when the entry's dependencies were last
    probed and found unchanged. `execution` is the implementation step it came from (empty for
    legacy imports), `fingerprint` that step's digest of item, tree, model and scope.
    """

    id: str
    project: str
    repository: str
    kind: EntryKind
    title: str
    body: str
    visibility: Visibility
    owner: str
    state: EntryState
    version: int
    created_at: float
    changed_at: float
    sources: tuple[EntrySource, ...] = ()
    dependencies: tuple[Dependency, ...] = ()
    provider: str = ""
    fingerprint: str = ""
    execution: str = ""
    supersedes: str | None = None
    superseded_by: str | None = None
    verified_at: float | None = None
    checked_at: float | None = None
    reason: str = ""
    evidence: tuple[EvidenceRef, ...] = ()


# -- events --------------------------------------------------------------------------------------


class KnowledgeBankCreated(Event, frozen=True, tag="knowledge.bank.created"):
    bank: KnowledgeBank


class PageAdmitted(Event, frozen=True, tag="knowledge.page.admitted"):
    page: Page


class PageSuperseded(Event, frozen=True, tag="knowledge.page.superseded"):
    """A page's source changed and no longer holds it; `by` is the page that replaced its place."""

    id: str
    by: str | None = None


class SourceIngested(Event, frozen=True, tag="knowledge.source.ingested"):
    """A file's pages were (re)written; `previous` is the digest the ingest read (compare-and-set)."""

    source: SourceRecord
    previous: str = ""


class RepositoryRegistered(Event, frozen=True, tag="knowledge.repository.registered"):
    repository: Repository


class EntryProposed(Event, frozen=True, tag="knowledge.entry.proposed"):
    """A candidate entry from an implementation step (written with the step's finish)."""

    entry: KnowledgeEntry


class EntryImported(Event, frozen=True, tag="knowledge.entry.imported"):
    """An entry from older data, as `legacy_unverified`: kept, never treated as fact."""

    entry: KnowledgeEntry


class EntryVerified(Event, frozen=True, tag="knowledge.entry.verified"):
    """The acceptance gate passed a candidate on the evidence named here (as read at `version`)."""

    id: str
    version: int
    evidence: tuple[EvidenceRef, ...]


class EntryRevalidated(Event, frozen=True, tag="knowledge.entry.revalidated"):
    """A probe found the entry's dependencies unchanged at `at` (compare-and-set on `version`)."""

    id: str
    version: int


class EntryStaled(Event, frozen=True, tag="knowledge.entry.stale"):
    """A probe proved a dependency changed (compare-and-set on `version`)."""

    id: str
    version: int
    reason: str


class EntrySuperseded(Event, frozen=True, tag="knowledge.entry.superseded"):
    """A verified entry (a decision) was replaced by entry `by`."""

    id: str
    version: int
    by: str


# -- commands and replies ------------------------------------------------------------------------


class SearchPages(Message, frozen=True, tag="knowledge.search"):
    """Facade → index: the `k` best pages of `bank` in `states` for the (checked) query."""

    bank: str
    query: str
    k: int
    states: tuple[PageState, ...] = ("active",)


class PageHit(Message, frozen=True, tag="knowledge.page.hit"):
    id: str
    score: float


class PagesFound(Message, frozen=True, tag="knowledge.pages.found"):
    """The index's answer: page ids with their BM25 scores, best first, as of event `seq`."""

    hits: tuple[PageHit, ...]
    seq: int


class CatchUpIndex(Message, frozen=True, tag="knowledge.index.catch_up"):
    """Index every page change committed so far; the answer is the index's status after it.

    With `commit` false the changes are only staged: handed to the index writer, which indexes
    them on its own thread, and committed by the next catch-up that commits (a search, a status, the
    end of an ingest). An ingest stages window by window and commits once, at its end.
    """

    commit: bool = True


class Reindex(Message, frozen=True, tag="knowledge.index.rebuild"):
    """Drop the derived index and build it again from the pages in LMDB."""


class GetIndexStatus(Message, frozen=True, tag="knowledge.index.status.get"):
    pass


class IndexStatus(Message, frozen=True, tag="knowledge.index.status"):
    """What the derived index holds: indexed pages, the last event it has seen, its last rebuild.

    `state` is `indexing` while the index is rebuilt or caught up in the background (after a start
    that found it missing, stale or behind, or a reindex): searches are refused with
    `KnowledgeIndexing` until it is `ready`.
    """

    pages: int
    seq: int
    rebuilt: bool
    rebuild_seconds: float
    state: Literal["ready", "indexing"] = "ready"


class SearchHit(Message, frozen=True, tag="knowledge.search.hit"):
    """One search result: the page, where it came from, how well it matched, and a snippet."""

    id: str
    bank: str
    title: str
    source: str
    score: float
    snippet: str
    state: PageState


class Rejection(Record, frozen=True):
    """A file or page the ingest gate refused, and why."""

    path: str
    reason: str
    title: str = ""


class Skip(Record, frozen=True):
    """A file or page that was already there (unchanged file, duplicate page)."""

    path: str
    reason: str
    title: str = ""


class IngestReport(Message, frozen=True, tag="knowledge.ingest.report"):
    """What one ingest did: pages admitted and superseded, and everything skipped or rejected."""

    bank: str
    files: int
    admitted: int
    superseded: int
    skipped: tuple[Skip, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    pages: tuple[str, ...] = ()


class ContextEntry(Message, frozen=True, tag="knowledge.context.entry"):
    """One verified entry as context preparation hands it out (revalidated just before)."""

    id: str
    project: str
    repository: str
    kind: EntryKind
    title: str
    body: str
    visibility: Visibility
    owner: str
    sources: tuple[EntrySource, ...]
    verified_at: float
    checked_at: float
