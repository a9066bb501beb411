"""The knowledge operations' requests and replies (`rt.knowledge`, and the session's own context for the MCP tool).

Bounds are wide: the runtime's own typed errors do the fine checking (a `k` of 101 is its `InvalidInput`, a
blank query its `TextInvalid`). Files the owner names (`ingest`, `import_legacy`, a repository's work tree)
travel as paths that the runtime reads: it runs as the same user on the same machine, and these are the owner's
alone (docs/api.md, "Files").
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Literal

import msgspec

from resident.messages.bounds import FilePath, Name, Named, Text
from resident.messages.knowledge import ContextEntry, KnowledgeBank, KnowledgeEntry, Repository, SearchHit
from resident.messages.memory import Principal

__all__ = [
    "MAX_PATHS", "Banks", "BanksQuery", "ContextEntries", "ContextQuery", "CreateKnowledgeBank", "Entries",
    "EntriesQuery", "EntryQuery", "GrantView", "ImportLegacy", "IndexQuery", "Ingest", "LegacyImported",
    "PageHits", "PageQuery", "Promote", "RegisterRepository", "Reindex", "Repositories", "RepositoriesQuery",
    "SessionContext", "SessionQuery",
]

# An ingest names at most this many files or folders (a folder brings all of its files).
MAX_PATHS = 1_000
# Wider than any `k` the runtime accepts (100), so its own InvalidInput says the limit.
Count = Annotated[int, msgspec.Meta(ge=1, le=1_000)]
EntryRef = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class _Bank(_Request, frozen=True):
    name: Named


class CreateKnowledgeBank(_Bank, frozen=True):
    """A knowledge bank and its owner (`member:M`, `app:A` or `workspace:W`); creating it again changes nothing."""

    owner: Annotated[str, msgspec.Meta(max_length=300)] = "workspace:default"


class BanksQuery(_Request, frozen=True):
    """The knowledge banks `principal` may use (all of them for the home's owner)."""

    principal: Principal | None = None


class Banks(msgspec.Struct, frozen=True, kw_only=True):
    banks: tuple[KnowledgeBank, ...]


class _Ingested(_Request, frozen=True):
    bank: Named
    paths: Annotated[Collection[FilePath], msgspec.Meta(min_length=1, max_length=MAX_PATHS)]


class Ingest(_Ingested, frozen=True, kw_only=True):
    """Files and folders to ingest into `bank` through the ingest gate (paths on the runtime's machine)."""

    principal: Principal | None = None


class _Searched(_Request, frozen=True):
    bank: Named
    query: Text
    k: Count = 10


class PageQuery(_Searched, frozen=True, kw_only=True):
    """The `k` best pages of `bank` for `query` by BM25, over its current pages, superseded ones, or both."""

    state: Literal["active", "superseded", "all"] = "active"
    principal: Principal | None = None
    timeout: Annotated[float, msgspec.Meta(ge=1.0, le=86_400.0)] | None = None


class PageHits(msgspec.Struct, frozen=True, kw_only=True):
    hits: tuple[SearchHit, ...]


class Reindex(_Request, frozen=True, kw_only=True):
    """Drop the derived page index and build it again from the store."""

    timeout: Annotated[float, msgspec.Meta(ge=1.0, le=86_400.0)] | None = None


class IndexQuery(_Request, frozen=True):
    """How the page index stands: pages indexed, whether it was rebuilt."""


class _Registered(_Request, frozen=True):
    repository_id: Named
    path: FilePath


class RegisterRepository(_Registered, frozen=True, kw_only=True):
    """Register (or re-register) a repository: its work tree, its project (its id when left out), its members."""

    project: Named | None = None
    members: Annotated[Collection[Name], msgspec.Meta(max_length=1_000)] = ()


class RepositoriesQuery(_Request, frozen=True):
    """The registered repositories."""


class Repositories(msgspec.Struct, frozen=True, kw_only=True):
    repositories: tuple[Repository, ...]


class _Reader(_Request, frozen=True):
    # The member reading; the home's owner (who reads everything) when left out.
    member: Named | None = None


class EntriesQuery(_Reader, frozen=True, kw_only=True):
    """Verified-knowledge entries `member` may read (the owner's view when left out), oldest first, optionally of
    one project, repository or state."""

    project: Named | None = None
    repository: Named | None = None
    state: Annotated[str, msgspec.Meta(max_length=100)] | None = None


class Entries(msgspec.Struct, frozen=True, kw_only=True):
    entries: tuple[KnowledgeEntry, ...]


class EntryQuery(_Request, frozen=True):
    """One entry, if `member` may read it (the owner when left out); `EntryNotFound` otherwise, its existence
    does not leak."""

    entry_id: EntryRef
    member: Named | None = None


class Promote(_Request, frozen=True):
    """Put a candidate entry to the acceptance gate; `PromotionRefused` says every reason it did not pass."""

    entry_id: EntryRef


class _Context(_Request, frozen=True):
    member: Named | None
    project: Named
    repository: Named
    query: Text | None = None


class ContextQuery(_Context, frozen=True, kw_only=True):
    """The verified entries `member` may use for `project` and `repository`, each revalidated now, ranked by
    `query` if given."""

    k: Count = 20


class ContextEntries(msgspec.Struct, frozen=True, kw_only=True):
    entries: tuple[ContextEntry, ...]


class ImportLegacy(_Request, frozen=True):
    """A legacy knowledge file (JSON Lines or a JSON array), imported as `legacy_unverified` entries."""

    path: FilePath


class LegacyImported(msgspec.Struct, frozen=True, kw_only=True):
    imported: int
    skipped: int


class SessionQuery(_Request, frozen=True):
    """The member session the presented grant token stands for (a grant token is required)."""


class GrantView(msgspec.Struct, frozen=True, kw_only=True):
    member: str
    execution: str
    knowledge: bool


class SessionContext(_Request, frozen=True, kw_only=True):
    """`knowledge_context` of the MCP server: context for the calling session's own member and work."""

    project_id: Named
    repository_id: Named
    query: Text | None = None
    k: Count = 20
