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
Declared in `resident.operations.knowledge`; a member session reads knowledge only through `session_context`,
whose subject is its own member held to the repository of its work, never a name in the request.
"""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from resident.errors import (
    EntryNotFound,
    GrantInvalid,
    InvalidInput,
    KnowledgeDisabled,
    NotVisible,
    TextInvalid,
    UnknownBank,
)
from resident.knowledge.banks import can_use, knowledge_bank
from resident.knowledge.legacy import legacy_entries
from resident.knowledge.repositories import check_ref, repository
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
from resident.messages.knowledge_calls import (
    Banks,
    BanksQuery,
    ContextEntries,
    ContextQuery,
    CreateKnowledgeBank,
    Entries,
    EntriesQuery,
    EntryQuery,
    GrantView,
    ImportLegacy,
    IndexQuery,
    Ingest,
    LegacyImported,
    PageHits,
    PageQuery,
    Promote,
    RegisterRepository,
    Repositories,
    RepositoriesQuery,
    SessionContext,
    SessionQuery,
)
from resident.messages.knowledge_calls import Reindex as ReindexRequest
from resident.messages.memory import Principal
from resident.messages.store import Commit
from resident.runtime.context import Call, Context
from resident.runtime.knowledge.context import DEFAULT_CONTEXT_K, prepare
from resident.runtime.knowledge.evidence import require_promoted
from resident.runtime.knowledge.ingest import Progress
from resident.runtime.knowledge.ingest import ingest as ingest_files
from resident.store.tables import KNOWLEDGE_BANKS, KNOWLEDGE_ENTRIES, KNOWLEDGE_REPOSITORIES, PAGES
from resident.supervisor import Address
from resident.user_files import read_user_file

if TYPE_CHECKING:
    from resident.runtime.coordination import Session

__all__ = [
    "INGEST_PROGRESS", "KNOWLEDGE_OFF", "MAX_LEGACY_BYTES", "MAX_SEARCH_K", "banks", "context_entries", "create_bank",
    "entries", "entry", "import_legacy", "index_status", "ingest", "promote", "register_repository", "reindex",
    "repositories", "search", "session_context", "session_grant",
]

MAX_LEGACY_BYTES = 64 * 1024 * 1024
KNOWLEDGE_OFF = "knowledge is off for this home; set `[knowledge] enabled = true` in its resident.toml"
# A member's name, a `Subject`, or None for the home's owner.
SubjectLike = str | Subject | None
_STATES: dict[str, tuple[PageState, ...]] = {
    "active": ("active",), "superseded": ("superseded",), "all": ("active", "superseded"),
}


# Called with (files done, files in all) as an ingest goes: a command that runs its ingest in this process sets
# it around the call (a request over the wire has no one to report to, so the server never does).
INGEST_PROGRESS: ContextVar[Progress | None] = ContextVar("ingest_progress", default=None)


def _indexer(context: Context) -> Address:
    context.check_open()
    if context.knowledge is None:
        raise KnowledgeDisabled(KNOWLEDGE_OFF)
    return context.knowledge


# -- banks ----------------------------------------------------------------------------------------


def create_bank(context: Context, _call: Call, request: CreateKnowledgeBank) -> KnowledgeBank:
    """Create a bank owned by `member:M`, `app:A` or `workspace:W`; creating it again is a no-op."""
    _indexer(context)
    bank = knowledge_bank(request.name, request.owner, at=context.clock.time())
    if bank.owner_kind == "member":
        context.config.member(bank.owner)
    context.write(Commit(events=(KnowledgeBankCreated(at=bank.created_at, bank=bank),)))
    with context.store.reader() as reader:
        return reader.get(KNOWLEDGE_BANKS, bank.name) or bank


def banks(context: Context, _call: Call, request: BanksQuery) -> Banks:
    """The banks `principal` may use (None: all of them)."""
    _indexer(context)
    with context.store.reader() as reader:
        return Banks(banks=tuple(bank for _, bank in reader.items(KNOWLEDGE_BANKS) if can_use(request.principal, bank)))


def _bank(context: Context, name: str, principal: Principal | None) -> KnowledgeBank:
    with context.store.reader() as reader:
        bank = reader.get(KNOWLEDGE_BANKS, name) if isinstance(name, str) else None
    if bank is None:
        raise UnknownBank(f"no knowledge bank named {name!r}; create it with `resident knowledge banks create`")
    if not can_use(principal, bank):
        raise NotVisible(f"knowledge bank {name} does not belong to {principal.kind} {principal.name}"
                         if principal is not None else f"knowledge bank {name} is not visible")
    return bank


# -- pages ----------------------------------------------------------------------------------------


def ingest(context: Context, call: Call, request: Ingest) -> IngestReport:
    """Ingest files and folders into `bank` through the gate (see `resident.runtime.knowledge.ingest`).

    Over the API every path must be absolute (the runtime's working folder is not the caller's).
    """
    paths = [Path(path) for path in request.paths]
    if call.remote:
        relative = [str(path) for path in paths if not path.is_absolute()]
        if relative:
            raise InvalidInput(f"a path to ingest must be absolute, not {relative[0]!r}")
    _indexer(context)
    target = _bank(context, request.bank, request.principal)
    return ingest_files(context, target.name, paths, INGEST_PROGRESS.get())


def search(context: Context, _call: Call, request: PageQuery) -> PageHits:
    """The `k` (≤ 100) best pages of `bank` for `query` by BM25, in `state` (active, superseded, all)."""
    indexer = _indexer(context)
    text = _query(request.query)
    k = request.k
    if not isinstance(k, int) or not 1 <= k <= MAX_SEARCH_K:
        raise InvalidInput(f"k must be between 1 and {MAX_SEARCH_K}, not {k!r}")
    states = _STATES.get(request.state) if isinstance(request.state, str) else None
    if states is None:
        raise InvalidInput(f"unknown page state {request.state!r}; use {', '.join(_STATES)}")
    target = _bank(context, request.bank, request.principal)
    found: PagesFound = indexer.ask(SearchPages(bank=target.name, query=text, k=k, states=states), request.timeout)
    hits = []
    with context.store.reader() as reader:
        for hit in found.hits:
            page = reader.get(PAGES, hit.id)
            # Re-read from LMDB before serving: the index may be a moment behind a change.
            if page is None or page.bank != target.name or page.state not in states:
                continue
            hits.append(SearchHit(
                id=page.id, bank=page.bank, title=page.title, source=page.source.path, score=hit.score,
                snippet=snippet(page.body, text), state=page.state,
            ))
    return PageHits(hits=tuple(hits))


def reindex(context: Context, _call: Call, request: ReindexRequest) -> IndexStatus:
    """Drop the derived page index and build it again from LMDB."""
    status: IndexStatus = _indexer(context).ask(Reindex(), 600.0 if request.timeout is None else request.timeout)
    return status


def index_status(context: Context, _call: Call, _request: IndexQuery) -> IndexStatus:
    """How the page index stands."""
    status: IndexStatus = _indexer(context).ask(GetIndexStatus())
    return status


# -- repositories ---------------------------------------------------------------------------------


def register_repository(context: Context, call: Call, request: RegisterRepository) -> Repository:
    """Register (or re-register) a repository: its project (default: its id), work tree and members."""
    tree = Path(request.path).expanduser()
    if call.remote and not tree.is_absolute():
        raise InvalidInput(f"a work tree must be an absolute path, not {str(request.path)!r}")
    _indexer(context)
    if not tree.is_dir():
        raise InvalidInput(f"{tree} is not a directory; give the repository's work tree")
    named = tuple(request.members)
    for member in named:
        context.config.member(member)
    repository_id = request.repository_id
    registration = repository(
        repository_id, repository_id if request.project is None else request.project, tree.resolve(), named,
        at=context.clock.time(),
    )
    context.write(Commit(events=(RepositoryRegistered(at=registration.registered_at, repository=registration),)))
    return registration


def repositories(context: Context, _call: Call, _request: RepositoriesQuery) -> Repositories:
    """The registered repositories."""
    _indexer(context)
    with context.store.reader() as reader:
        return Repositories(repositories=tuple(found for _, found in reader.items(KNOWLEDGE_REPOSITORIES)))


# -- entries --------------------------------------------------------------------------------------


def _subject(context: Context, subject: str | Subject | None) -> Subject:
    """Who reads: the owner (None), a member by name, or (in process) a `Subject` held to some repositories."""
    if subject is None:
        return Subject.owner()
    if isinstance(subject, str):
        return Subject(member=context.config.member(subject).name)
    if subject.member is not None:
        context.config.member(subject.member)
    return subject


def entries(context: Context, _call: Call, request: EntriesQuery) -> Entries:
    """The entries `member` may read, optionally of one project, repository or state, oldest first."""
    _indexer(context)
    who = _subject(context, request.member)
    state, project, repository_id = request.state, request.project, request.repository
    if state is not None and state not in ENTRY_STATES:
        raise InvalidInput(f"unknown entry state {state!r}; use {', '.join(ENTRY_STATES)}")
    with context.store.reader() as reader:
        registered = dict(reader.items(KNOWLEDGE_REPOSITORIES))
        found = [
            entry for _, entry in reader.items(KNOWLEDGE_ENTRIES)
            if project in (None, entry.project) and repository_id in (None, entry.repository)
            and state in (None, entry.state) and _readable(who, entry, registered)
        ]
    return Entries(entries=tuple(sorted(found, key=lambda entry: (entry.created_at, entry.id))))


def entry(context: Context, _call: Call, request: EntryQuery) -> KnowledgeEntry:
    """One entry, if `member` may read it (`EntryNotFound` otherwise: its existence does not leak)."""
    return _entry(context, request.entry_id, _subject(context, request.member))


def _entry(context: Context, entry_id: str, who: Subject) -> KnowledgeEntry:
    _indexer(context)
    with context.store.reader() as reader:
        found = reader.get(KNOWLEDGE_ENTRIES, entry_id) if isinstance(entry_id, str) else None
        registered = reader.get(KNOWLEDGE_REPOSITORIES, found.repository) if found is not None else None
    if found is None or not _readable(who, found, {found.repository: registered} if registered else {}):
        raise EntryNotFound(f"no knowledge entry {entry_id!r} is visible to {who.describe()}")
    return found


def promote(context: Context, _call: Call, request: Promote) -> KnowledgeEntry:
    """Ask the acceptance gate to verify a candidate; `PromotionRefused` says every reason it did not."""
    _entry(context, request.entry_id, Subject.owner())
    return require_promoted(context, request.entry_id)


def context_entries(context: Context, _call: Call, request: ContextQuery) -> ContextEntries:
    """Verified entries `member` may use for `project` and `repository`, each revalidated now."""
    return ContextEntries(entries=tuple(prepared_context(
        context, _subject(context, request.member), request.project, request.repository, request.query, k=request.k
    )))


def prepared_context(
    context: Context, who: Subject, project: str, repository_id: str, query: str | None, *, k: int = DEFAULT_CONTEXT_K
) -> list[ContextEntry]:
    """The context `who` may use (see `resident.runtime.knowledge.context`)."""
    _indexer(context)
    check_ref("project", project)
    check_ref("repository", repository_id)
    text = _query(query) if query is not None else None
    return prepare(context, who, project, repository_id, query=text, k=k, ttl=context.revalidation.ttl)


def import_legacy(context: Context, call: Call, request: ImportLegacy) -> LegacyImported:
    """Import older entries as `legacy_unverified` in one transaction (all of the file or none of it)."""
    source = Path(request.path)
    if call.remote and not source.is_absolute():
        raise InvalidInput(f"the legacy file must be an absolute path, not {str(request.path)!r}")
    _indexer(context)
    data = _legacy_bytes(source)
    found = {found.id: found for found in legacy_entries(data, str(source), now=context.clock.time())}
    with context.store.reader() as reader:
        fresh = [entry for entry_id, entry in found.items() if reader.get(KNOWLEDGE_ENTRIES, entry_id) is None]
    if fresh:
        context.write(Commit(events=tuple(EntryImported(at=entry.changed_at, entry=entry) for entry in fresh)))
    return LegacyImported(imported=len(fresh), skipped=len(found) - len(fresh))


# -- the session's own ----------------------------------------------------------------------------


def _session(call: Call) -> Session:
    """The session whose grant token the call presents; the owner has none to speak of."""
    if call.caller.session is None:
        raise GrantInvalid("this call is about a member session: present the session's grant token")
    return call.caller.session


def session_grant(context: Context, call: Call, _request: SessionQuery) -> GrantView:
    """The member session the presented grant token stands for, and whether knowledge is on."""
    session = _session(call)
    return GrantView(
        member=session.member.name, execution=session.execution.id, knowledge=context.config.knowledge.enabled
    )


def session_context(context: Context, call: Call, request: SessionContext) -> ContextEntries:
    """Context for the calling session's own member, held to the repository of the work it was dispatched on."""
    session = _session(call)
    work = session.execution.work
    who = Subject(
        member=session.execution.member, repositories=frozenset({work.repository}) if work is not None else frozenset()
    )
    return ContextEntries(entries=tuple(prepared_context(
        context, who, request.project_id, request.repository_id, request.query, k=request.k
    )))


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
