"""Request and answer bodies of the knowledge routes (`resident knowledge …` and the MCP server's tool).

Like `wire`, plain structs that refuse unknown fields, with wide bounds: the runtime's own typed
errors do the fine checking (a `k` of 101 is its `InvalidInput`, a blank query its `TextInvalid`).
Files the owner names (`ingest`, `import-legacy`) travel as absolute paths that the runtime reads:
it runs as the same user on the same machine, and the commands are the owner's alone (see
docs/api.md, "Files"). Light: msgspec and the message structs only.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from resident.messages.bounds import Name, Named, Text
from resident.messages.knowledge import ContextEntry, KnowledgeBank, KnowledgeEntry, Repository, SearchHit

__all__ = [
    "MAX_PATHS",
    "Banks",
    "ContextEntries",
    "ContextQuery",
    "CreateBank",
    "Entries",
    "EntriesQuery",
    "GrantView",
    "ImportLegacy",
    "Ingest",
    "LegacyImported",
    "PageHits",
    "PageQuery",
    "RegisterRepository",
    "Repositories",
    "SessionContext",
]

# An ingest names at most this many files or folders (a folder brings all of its files).
MAX_PATHS = 1_000
# A path on the runtime's machine (checked to be absolute by the handler, which names it).
Path = Annotated[str, msgspec.Meta(min_length=1, max_length=4_096)]
# Wider than any `k` the runtime accepts (100), so its own InvalidInput says the limit.
Count = Annotated[int, msgspec.Meta(ge=1, le=1_000)]


class _Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A request body: unknown fields are refused rather than ignored."""


class _Answer(msgspec.Struct, frozen=True, kw_only=True):
    """An answer body of the API itself."""


# -- requests ------------------------------------------------------------------------------------


class CreateBank(_Request, frozen=True):
    """A knowledge bank and its owner (`member:M`, `app:A` or `workspace:W`; the runtime checks the form)."""

    name: Named
    owner: Annotated[str, msgspec.Meta(max_length=300)] = "workspace:default"


class Ingest(_Request, frozen=True):
    """Files and folders to ingest into the bank the path names: absolute paths the runtime reads."""

    paths: Annotated[tuple[Path, ...], msgspec.Meta(min_length=1, max_length=MAX_PATHS)]


class PageQuery(_Request, frozen=True):
    """A BM25 search of the bank the path names, over its current pages, superseded ones, or both."""

    query: Text
    k: Count = 10
    state: Literal["active", "superseded", "all"] = "active"


class RegisterRepository(_Request, frozen=True):
    """A repository, its work tree (an absolute path), its project (its id when left out) and its members."""

    repository: Named
    path: Path
    project: Named | None = None
    members: Annotated[tuple[Name, ...], msgspec.Meta(max_length=1_000)] = ()


class EntriesQuery(_Request, frozen=True):
    """Verified-knowledge entries, optionally of one project, repository or state."""

    project: Named | None = None
    repository: Named | None = None
    state: Annotated[str, msgspec.Meta(max_length=100)] | None = None


class ContextQuery(_Request, frozen=True):
    """The verified entries a member may use for a project and repository, ranked by `query` if given."""

    member: Named
    project: Named
    repository: Named
    query: Text | None = None
    k: Count = 20


class ImportLegacy(_Request, frozen=True):
    """A legacy knowledge file (JSON Lines or a JSON array): an absolute path the runtime reads."""

    path: Path


class SessionContext(_Request, frozen=True):
    """`knowledge_context` of the MCP server: context for the calling session's own member and work."""

    project_id: Named
    repository_id: Named
    query: Text | None = None
    k: Count = 20


# -- answers -------------------------------------------------------------------------------------


class Banks(_Answer, frozen=True):
    banks: tuple[KnowledgeBank, ...]


class PageHits(_Answer, frozen=True):
    hits: tuple[SearchHit, ...]


class Repositories(_Answer, frozen=True):
    repositories: tuple[Repository, ...]


class Entries(_Answer, frozen=True):
    entries: tuple[KnowledgeEntry, ...]


class ContextEntries(_Answer, frozen=True):
    entries: tuple[ContextEntry, ...]


class LegacyImported(_Answer, frozen=True):
    """Entries added as `legacy_unverified`, and ones already there."""

    imported: int
    skipped: int


class GrantView(_Answer, frozen=True):
    """The session a grant token stands for, as its MCP server needs it: whose, on what, and knowledge on or off."""

    member: str
    execution: str
    knowledge: bool

