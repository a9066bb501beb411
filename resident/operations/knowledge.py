"""Knowledge (`rt.knowledge`): banks and their pages, verified entries, context preparation; and a member session's
own context, for the MCP tool.

Every `knowledge.*` operation is the owner's, so knowledge is read as the owner reads it (or as the member the
owner names); a member session reads knowledge only through `session.context`, whose subject is the token's
member held to the repository of its work, never a name in the request.
"""

from __future__ import annotations

from resident.messages.knowledge import (
    ContextEntry,
    IndexStatus,
    IngestReport,
    KnowledgeBank,
    KnowledgeEntry,
    Repository,
    SearchHit,
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
    Reindex,
    Repositories,
    RepositoriesQuery,
    SessionContext,
    SessionQuery,
)
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = [
    "BANKS", "BANK_CREATE", "CONTEXT", "ENTRIES", "ENTRY", "IMPORT_LEGACY", "INDEX_STATUS", "INGEST", "OPERATIONS",
    "PROMOTE", "REINDEX", "REPOSITORIES", "REPOSITORY_ADD", "SEARCH", "SESSION_CONTEXT", "SESSION_GRANT",
    "KnowledgeSurface", "SessionSurface",
]

_SERVICES = "resident.runtime.knowledge.banks"
# An ingest or a rebuild of the index answers when it is done: a client waits up to this long (seconds).
_LONG = 3_600.0


def _banks(reply: Banks) -> list[KnowledgeBank]:
    return list(reply.banks)


def _hits(reply: PageHits) -> list[SearchHit]:
    return list(reply.hits)


def _repositories(reply: Repositories) -> list[Repository]:
    return list(reply.repositories)


def _entries(reply: Entries) -> list[KnowledgeEntry]:
    return list(reply.entries)


def _context(reply: ContextEntries) -> list[ContextEntry]:
    return list(reply.entries)


BANK_CREATE = declare(
    "knowledge.banks.create", "Create a knowledge bank (creating it again for the same owner changes nothing)",
    CreateKnowledgeBank, KnowledgeBank, route=Route("POST", "/v1/knowledge/banks"), service=f"{_SERVICES}:create_bank",
)
BANKS = declare(
    "knowledge.banks.list", "The knowledge banks and their owners", BanksQuery, Banks,
    route=Route("GET", "/v1/knowledge/banks"), service=f"{_SERVICES}:banks", result=_banks,
)
INGEST = declare(
    "knowledge.ingest", "Ingest files and folders (absolute paths the runtime reads) into a bank", Ingest,
    IngestReport, route=Route("POST", "/v1/knowledge/banks/{bank}/ingest", wait=_LONG), service=f"{_SERVICES}:ingest",
)
SEARCH = declare(
    "knowledge.search", "Search a bank's pages (BM25)", PageQuery, PageHits,
    route=Route("POST", "/v1/knowledge/banks/{bank}/search"), service=f"{_SERVICES}:search", result=_hits,
)
REINDEX = declare(
    "knowledge.reindex", "Rebuild the keyword index of every page from the store", Reindex, IndexStatus,
    route=Route("POST", "/v1/knowledge/reindex", wait=_LONG), service=f"{_SERVICES}:reindex",
)
INDEX_STATUS = declare(
    "knowledge.index", "How the keyword index of the pages stands", IndexQuery, IndexStatus,
    route=Route("GET", "/v1/knowledge/index"), service=f"{_SERVICES}:index_status",
)
REPOSITORY_ADD = declare(
    "knowledge.repositories.add", "Register a repository, its work tree (an absolute path) and its members",
    RegisterRepository, Repository, route=Route("POST", "/v1/knowledge/repositories"),
    service=f"{_SERVICES}:register_repository",
)
REPOSITORIES = declare(
    "knowledge.repositories.list", "The registered repositories", RepositoriesQuery, Repositories,
    route=Route("GET", "/v1/knowledge/repositories"), service=f"{_SERVICES}:repositories", result=_repositories,
)
ENTRIES = declare(
    "knowledge.entries", "Verified-knowledge entries in every state, as the owner or a named member sees them",
    EntriesQuery, Entries, route=Route("POST", "/v1/knowledge/entries"), service=f"{_SERVICES}:entries",
    result=_entries,
)
ENTRY = declare(
    "knowledge.entry", "One verified-knowledge entry", EntryQuery, KnowledgeEntry,
    route=Route("GET", "/v1/knowledge/entries/{entry_id}"), service=f"{_SERVICES}:entry",
)
PROMOTE = declare(
    "knowledge.promote", "Put a candidate entry to the acceptance gate", Promote, KnowledgeEntry,
    route=Route("POST", "/v1/knowledge/entries/{entry_id}/promote"), service=f"{_SERVICES}:promote",
)
CONTEXT = declare(
    "knowledge.context", "The verified entries a member may use for a project and repository, each revalidated now",
    ContextQuery, ContextEntries, route=Route("POST", "/v1/knowledge/context"),
    service=f"{_SERVICES}:context_entries", result=_context,
)
IMPORT_LEGACY = declare(
    "knowledge.import_legacy", "Import older knowledge (a path the runtime reads) as legacy_unverified",
    ImportLegacy, LegacyImported, route=Route("POST", "/v1/knowledge/legacy"), service=f"{_SERVICES}:import_legacy",
)
SESSION_GRANT = declare(
    "session.grant", "The member session the presented grant token stands for (a grant token is required)",
    SessionQuery, GrantView, route=Route("GET", "/v1/session"), service=f"{_SERVICES}:session_grant",
    access=Access.MEMBER,
)
SESSION_CONTEXT = declare(
    "session.context",
    "Verified knowledge for the calling session's own member and work (the MCP tool; a grant token is required)",
    SessionContext, ContextEntries, route=Route("POST", "/v1/session/context"),
    service=f"{_SERVICES}:session_context", access=Access.MEMBER, result=_context,
)

OPERATIONS = (
    BANK_CREATE, BANKS, INGEST, SEARCH, REINDEX, INDEX_STATUS, REPOSITORY_ADD, REPOSITORIES, ENTRIES, ENTRY,
    PROMOTE, CONTEXT, IMPORT_LEGACY, SESSION_GRANT, SESSION_CONTEXT,
)


class KnowledgeSurface(Surface):
    """`rt.knowledge`: knowledge banks and their pages, verified entries, context preparation."""

    create_bank = method(BANK_CREATE)
    acreate_bank = awaitable(BANK_CREATE)
    banks = method(BANKS)
    abanks = awaitable(BANKS)
    ingest = method(INGEST)
    aingest = awaitable(INGEST)
    search = method(SEARCH)
    asearch = awaitable(SEARCH)
    reindex = method(REINDEX)
    areindex = awaitable(REINDEX)
    index_status = method(INDEX_STATUS)
    aindex_status = awaitable(INDEX_STATUS)
    register_repository = method(REPOSITORY_ADD)
    aregister_repository = awaitable(REPOSITORY_ADD)
    repositories = method(REPOSITORIES)
    arepositories = awaitable(REPOSITORIES)
    entries = method(ENTRIES)
    aentries = awaitable(ENTRIES)
    entry = method(ENTRY)
    aentry = awaitable(ENTRY)
    promote = method(PROMOTE)
    apromote = awaitable(PROMOTE)
    context = method(CONTEXT)
    acontext = awaitable(CONTEXT)
    import_legacy = method(IMPORT_LEGACY)
    aimport_legacy = awaitable(IMPORT_LEGACY)


class SessionSurface(Surface):
    """`rt.session`: what a member session asks of itself (with `rt.with_grant(token)`): who it is, and the
    verified knowledge for its own work."""

    grant = method(SESSION_GRANT)
    agrant = awaitable(SESSION_GRANT)
    context = method(SESSION_CONTEXT)
    acontext = awaitable(SESSION_CONTEXT)
