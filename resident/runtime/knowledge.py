"""`rt.knowledge`: knowledge banks and their pages, verified entries, context preparation.

    with Runtime.open(home) as rt:                     # resident.toml: [knowledge] enabled = true
        rt.knowledge.create_bank("handbook", owner="member:deven")
        report = rt.knowledge.ingest("handbook", ["docs/"])
        hits = rt.knowledge.search("handbook", "despliegue", k=5)
        rt.knowledge.register_repository("resident", "/src/resident", members=["deven", "alice"])
        entries = rt.knowledge.context("deven", "resident", "resident", query="writer")

Everything here is refused with `KnowledgeDisabled` unless `[knowledge] enabled = true` is in the
home's resident.toml. Banks and pages are read and written only by their owner (`principal`;
None is the home's owner, who acts for all). Entries are read through `Subject`s: every read
checks subject, project, repository and visibility first. Candidates are not created here but by
the implementation steps that propose them (`Session.finish(..., knowledge_candidate=...)`), and
only the acceptance gate verifies one (`promote`, or on its own when the evidence is complete).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from resident.errors import (
    EntryNotFound,
    InvalidInput,
    KnowledgeDisabled,
    NotVisible,
    TextInvalid,
    UnknownBank,
)
from resident.knowledge.banks import DEFAULT_OWNER, can_use, knowledge_bank
from resident.knowledge.legacy import legacy_entries
from resident.knowledge.repositories import check_ref, repository
from resident.knowledge.revalidation import DEFAULT_TTL
from resident.knowledge.snippet import snippet
from resident.knowledge.visibility import Subject, may_read
from resident.memory.records import MAX_QUERY_CHARS
from resident.messages.knowledge import (
    ENTRY_STATES,
    MAX_SEARCH_K,
    ContextEntry,
    EntryImported,
    GetIndexStatus,
    IndexStatus,
    IngestReport,
    KnowledgeBank,
    KnowledgeBankCreated,
    KnowledgeEntry,
    PagesFound,
    PageState,
    Reindex,
    Repository,
    RepositoryRegistered,
    SearchHit,
    SearchPages,
)
from resident.messages.memory import Principal
from resident.messages.store import Commit
from resident.runtime.knowledge_context import DEFAULT_CONTEXT_K, prepare
from resident.runtime.knowledge_evidence import require_promoted
from resident.runtime.knowledge_ingest import Progress, ingest
from resident.store.tables import KNOWLEDGE_BANKS, KNOWLEDGE_ENTRIES, KNOWLEDGE_REPOSITORIES, PAGES
from resident.supervisor import Address
from resident.user_files import read_user_file

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = ["MAX_LEGACY_BYTES", "MAX_SEARCH_K", "KnowledgeControl", "LegacyImport", "SubjectLike"]

MAX_LEGACY_BYTES = 64 * 1024 * 1024
KNOWLEDGE_OFF = "knowledge is off for this home; set `[knowledge] enabled = true` in its resident.toml"
# A member's name, a `Subject`, or None for the home's owner.
SubjectLike = str | Subject | None
_STATES: dict[str, tuple[PageState, ...]] = {
    "active": ("active",), "superseded": ("superseded",), "all": ("active", "superseded"),
}


@dataclass(frozen=True)
class LegacyImport:
    """What `import_legacy` did: entries added as `legacy_unverified`, and ones already there."""

    imported: int
    skipped: int


class KnowledgeControl:
    """The knowledge surface of a runtime (see the module docstring)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        # How long a successful check of an entry's dependencies counts (seconds, on rt.clock).
        self.ttl = DEFAULT_TTL

    @property
    def enabled(self) -> bool:
        return self._runtime.config.knowledge.enabled

    def _indexer(self) -> Address:
        self._runtime.check_open()
        indexer = self._runtime._internal.wiring.knowledge
        if indexer is None:
            raise KnowledgeDisabled(KNOWLEDGE_OFF)
        return indexer

    def _require(self) -> None:
        self._indexer()

    # -- banks ------------------------------------------------------------------------------------

    def create_bank(self, name: str, owner: str = DEFAULT_OWNER) -> KnowledgeBank:
        """Create a bank owned by `member:M`, `app:A` or `workspace:W`; creating it again is a no-op."""
        self._require()
        runtime = self._runtime
        bank = knowledge_bank(name, owner, at=runtime.clock.time())
        if bank.owner_kind == "member":
            runtime.config.member(bank.owner)
        runtime._internal.write(Commit(events=(KnowledgeBankCreated(at=bank.created_at, bank=bank),)))
        with runtime._internal.store.reader() as reader:
            return reader.get(KNOWLEDGE_BANKS, bank.name) or bank

    def banks(self, principal: Principal | None = None) -> list[KnowledgeBank]:
        """The banks `principal` may use (None: all of them)."""
        self._require()
        with self._runtime._internal.store.reader() as reader:
            return [bank for _, bank in reader.items(KNOWLEDGE_BANKS) if can_use(principal, bank)]

    def _bank(self, name: str, principal: Principal | None) -> KnowledgeBank:
        with self._runtime._internal.store.reader() as reader:
            bank = reader.get(KNOWLEDGE_BANKS, name) if isinstance(name, str) else None
        if bank is None:
            raise UnknownBank(f"no knowledge bank named {name!r}; create it with `resident knowledge banks create`")
        if not can_use(principal, bank):
            raise NotVisible(f"knowledge bank {name} does not belong to {principal.kind} {principal.name}"
                             if principal is not None else f"knowledge bank {name} is not visible")
        return bank

    # -- pages ------------------------------------------------------------------------------------

    def ingest(
        self,
        bank: str,
        paths: Sequence[str | os.PathLike[str]],
        *,
        principal: Principal | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Ingest files and folders into `bank` through the gate (see `resident.runtime.knowledge_ingest`)."""
        self._require()
        target = self._bank(bank, principal)
        return ingest(self._runtime, target.name, paths, progress)

    def search(
        self,
        bank: str,
        query: str,
        k: int = 10,
        *,
        state: str = "active",
        principal: Principal | None = None,
        timeout: float | None = None,
    ) -> list[SearchHit]:
        """The `k` (≤ 100) best pages of `bank` for `query` by BM25, in `state` (active, superseded, all)."""
        indexer = self._indexer()
        text = _query(query)
        if not isinstance(k, int) or not 1 <= k <= MAX_SEARCH_K:
            raise InvalidInput(f"k must be between 1 and {MAX_SEARCH_K}, not {k!r}")
        states = _STATES.get(state) if isinstance(state, str) else None
        if states is None:
            raise InvalidInput(f"unknown page state {state!r}; use {', '.join(_STATES)}")
        target = self._bank(bank, principal)
        found: PagesFound = indexer.ask(SearchPages(bank=target.name, query=text, k=k, states=states), timeout)
        hits = []
        with self._runtime._internal.store.reader() as reader:
            for hit in found.hits:
                page = reader.get(PAGES, hit.id)
                # Re-read from LMDB before serving: the index may be a moment behind a change.
                if page is None or page.bank != target.name or page.state not in states:
                    continue
                hits.append(SearchHit(
                    id=page.id, bank=page.bank, title=page.title, source=page.source.path, score=hit.score,
                    snippet=snippet(page.body, text), state=page.state,
                ))
        return hits

    def reindex(self, timeout: float | None = None) -> IndexStatus:
        """Drop the derived page index and build it again from LMDB."""
        status: IndexStatus = self._indexer().ask(Reindex(), 600.0 if timeout is None else timeout)
        return status

    def index_status(self) -> IndexStatus:
        status: IndexStatus = self._indexer().ask(GetIndexStatus())
        return status

    # -- repositories -----------------------------------------------------------------------------

    def register_repository(
        self, repository_id: str, path: str | os.PathLike[str], *, project: str | None = None,
        members: Iterable[str] = (),
    ) -> Repository:
        """Register (or re-register) a repository: its project (default: its id), work tree and members."""
        self._require()
        runtime = self._runtime
        tree = Path(path).expanduser()
        if not tree.is_dir():
            raise InvalidInput(f"{tree} is not a directory; give the repository's work tree")
        named = tuple(members)
        for member in named:
            runtime.config.member(member)
        registration = repository(
            repository_id, repository_id if project is None else project, tree.resolve(), named,
            at=runtime.clock.time(),
        )
        runtime._internal.write(Commit(events=(RepositoryRegistered(at=registration.registered_at,
                                                                    repository=registration),)))
        return registration

    def repositories(self) -> list[Repository]:
        self._require()
        with self._runtime._internal.store.reader() as reader:
            return [found for _, found in reader.items(KNOWLEDGE_REPOSITORIES)]

    # -- entries ----------------------------------------------------------------------------------

    def _subject(self, subject: SubjectLike) -> Subject:
        if subject is None:
            return Subject.owner()
        if isinstance(subject, str):
            return Subject(member=self._runtime.config.member(subject).name)
        if subject.member is not None:
            self._runtime.config.member(subject.member)
        return subject

    def entries(
        self, subject: SubjectLike = None, *, project: str | None = None, repository: str | None = None,
        state: str | None = None,
    ) -> list[KnowledgeEntry]:
        """The entries `subject` may read, optionally of one project, repository or state, oldest first."""
        self._require()
        who = self._subject(subject)
        if state is not None and state not in ENTRY_STATES:
            raise InvalidInput(f"unknown entry state {state!r}; use {', '.join(ENTRY_STATES)}")
        with self._runtime._internal.store.reader() as reader:
            registered = dict(reader.items(KNOWLEDGE_REPOSITORIES))
            found = [
                entry for _, entry in reader.items(KNOWLEDGE_ENTRIES)
                if project in (None, entry.project) and repository in (None, entry.repository)
                and state in (None, entry.state) and _readable(who, entry, registered)
            ]
        return sorted(found, key=lambda entry: (entry.created_at, entry.id))

    def entry(self, entry_id: str, subject: SubjectLike = None) -> KnowledgeEntry:
        """One entry, if `subject` may read it (`EntryNotFound` otherwise: its existence does not leak)."""
        self._require()
        who = self._subject(subject)
        with self._runtime._internal.store.reader() as reader:
            entry = reader.get(KNOWLEDGE_ENTRIES, entry_id) if isinstance(entry_id, str) else None
            registered = reader.get(KNOWLEDGE_REPOSITORIES, entry.repository) if entry is not None else None
        if entry is None or not _readable(who, entry, {entry.repository: registered} if registered else {}):
            raise EntryNotFound(f"no knowledge entry {entry_id!r} is visible to {who.describe()}")
        return entry

    def promote(self, entry_id: str) -> KnowledgeEntry:
        """Ask the acceptance gate to verify a candidate; `PromotionRefused` says every reason it did not."""
        self._require()
        self.entry(entry_id)
        return require_promoted(self._runtime._services, entry_id)

    def context(
        self, subject: SubjectLike, project: str, repository: str, query: str | None = None, *,
        k: int = DEFAULT_CONTEXT_K,
    ) -> list[ContextEntry]:
        """Verified entries `subject` may use for `project` and `repository`, each revalidated now."""
        self._require()
        who = self._subject(subject)
        check_ref("project", project)
        check_ref("repository", repository)
        text = _query(query) if query is not None else None
        return prepare(self._runtime, who, project, repository, query=text, k=k, ttl=self.ttl)

    def import_legacy(self, path: str | os.PathLike[str]) -> LegacyImport:
        """Import older entries as `legacy_unverified` in one transaction (all of the file or none of it)."""
        self._require()
        source = Path(path)
        data = _legacy_bytes(source)
        runtime = self._runtime
        entries = {entry.id: entry for entry in legacy_entries(data, str(source), now=runtime.clock.time())}
        with runtime._internal.store.reader() as reader:
            fresh = [entry for entry_id, entry in entries.items() if reader.get(KNOWLEDGE_ENTRIES, entry_id) is None]
        if fresh:
            runtime._internal.write(Commit(events=tuple(EntryImported(at=entry.changed_at, entry=entry)
                                                        for entry in fresh)))
        return LegacyImport(imported=len(fresh), skipped=len(entries) - len(fresh))


def _legacy_bytes(source: Path) -> bytes:
    """The legacy file's bytes: a regular file, read no further than the limit (a device never ends)."""
    return read_user_file(source, limit=MAX_LEGACY_BYTES, what="the legacy file")


def _readable(subject: Subject, entry: KnowledgeEntry, registered: dict[str, Repository]) -> bool:
    if subject.member is None:
        return True
    return may_read(subject, entry, registered.get(entry.repository))


def _query(query: str) -> str:
    """A search query as checked text: valid UTF-8, not blank, at most `MAX_QUERY_CHARS` characters."""
    if not isinstance(query, str):
        raise TextInvalid(f"the query must be text, not {type(query).__name__}")
    text = query.strip()
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise TextInvalid(f"the query is not valid UTF-8 (character {error.start}); send UTF-8 text") from None
    if not text:
        raise TextInvalid("the query is empty; say what to look for")
    if len(text) > MAX_QUERY_CHARS:
        raise TextInvalid(f"the query is {len(text)} characters; the limit is {MAX_QUERY_CHARS} — ask more briefly")
    return text
