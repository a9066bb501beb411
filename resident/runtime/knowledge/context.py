"""Context preparation: the verified entries a subject may use for a project and repository, each
revalidated just before it is handed out.

First the subject's authorization for the project and repository is checked (a refusal is an
error, not an empty answer). The verified entries it may read are ranked — by BM25 against the
query when there is one (memory's keyword index over their titles and bodies), newest first
otherwise — and taken in rank order until `k` pass revalidation:

* an entry checked within the TTL passes as it is;
* otherwise its dependencies are probed (`resident.runtime.knowledge.probe`). Unchanged: the check
  is written (`EntryRevalidated`); a proven change: the entry is marked stale (`EntryStaled`) and
  left out; a failed probe: left out, unmarked. Both writes are compare-and-set on the version read,
  and an entry whose write is refused because it changed meanwhile is left out.

Last, every entry about to be returned is read again and dropped if its state or version is no
longer the one read: nothing leaves this function in a state it no longer has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from resident.errors import InvalidInput, NotVisible
from resident.knowledge.lifecycle import is_served
from resident.knowledge.revalidation import is_fresh, verdict
from resident.knowledge.visibility import Subject, authorized, may_read
from resident.memory.keyword import KeywordIndex
from resident.messages.knowledge import (
    DEFAULT_CONTEXT_K,
    MAX_CONTEXT_K,
    ContextEntry,
    EntryRevalidated,
    EntryStaled,
    KnowledgeEntry,
    Repository,
)
from resident.messages.store import Commit
from resident.runtime.context import Context
from resident.runtime.knowledge.probe import WorkTree, probe_dependency
from resident.store.tables import KNOWLEDGE_ENTRIES, KNOWLEDGE_REPOSITORIES

__all__ = ["DEFAULT_CONTEXT_K", "MAX_CONTEXT_K", "ContextRead", "prepare", "read_context", "revalidate"]



@dataclass(frozen=True, slots=True)
class ContextRead:
    """What context preparation read in one transaction: ranked candidates and what their probes need."""

    repository: Repository
    ranked: tuple[KnowledgeEntry, ...]
    # Every entry some `entry` dependency of a ranked one names, as read.
    named: dict[str, KnowledgeEntry]


def prepare(
    context: Context, subject: Subject, project: str, repository: str, *, query: str | None, k: int, ttl: float
) -> list[ContextEntry]:
    """Read, rank, revalidate: the context a subject may use (see the module's docstring)."""
    return revalidate(context, read_context(context, subject, project, repository, query), k=k, ttl=ttl)


def read_context(
    context: Context, subject: Subject, project: str, repository: str, query: str | None
) -> ContextRead:
    """The subject's readable verified entries of the repository, best first (authorization first)."""
    with context.store.reader() as reader:
        registered = reader.get(KNOWLEDGE_REPOSITORIES, repository)
        if registered is None or not authorized(subject, registered, project):
            raise NotVisible(
                f"{subject.describe()} is not authorized for project {project!r} and repository {repository!r}"
            )
        entries = [
            entry for _, entry in reader.items(KNOWLEDGE_ENTRIES)
            if entry.repository == registered.id and entry.project == project and is_served(entry)
            and may_read(subject, entry, registered)
        ]
        wanted = {dep.ref for entry in entries for dep in entry.dependencies if dep.kind == "entry"}
        named = {ref: found for ref in wanted if (found := reader.get(KNOWLEDGE_ENTRIES, ref)) is not None}
    return ContextRead(repository=registered, ranked=tuple(_ranked(entries, query)), named=named)


def _ranked(entries: Sequence[KnowledgeEntry], query: str | None) -> list[KnowledgeEntry]:
    if not query:
        return sorted(entries, key=lambda entry: (-(entry.verified_at or 0.0), entry.id))
    index = KeywordIndex.build([f"{entry.title}\n{entry.body}" for entry in entries])
    rows, _ = index.search(query, None, len(entries))
    return [entries[row] for row in rows.tolist()]


def revalidate(context: Context, read: ContextRead, *, k: int, ttl: float) -> list[ContextEntry]:
    """The first `k` ranked entries that pass revalidation (writing what the probes found)."""
    if not 1 <= k <= MAX_CONTEXT_K:
        raise InvalidInput(f"k must be between 1 and {MAX_CONTEXT_K}, not {k}")
    tree = WorkTree(read.repository)
    served: list[tuple[KnowledgeEntry, float]] = []
    remaining = list(read.ranked)
    while remaining and len(served) < k:
        batch, remaining = remaining[: k - len(served)], remaining[k - len(served) :]
        served += _revalidated(context, batch, tree, read.named, ttl)
    return _still_as_read(context, served)


def _revalidated(
    context: Context, batch: Sequence[KnowledgeEntry], tree: WorkTree, named: dict[str, KnowledgeEntry], ttl: float
) -> list[tuple[KnowledgeEntry, float]]:
    """The entries of `batch` that pass, each with the time it was last checked."""
    now = context.clock.time()
    passing: list[tuple[KnowledgeEntry, float]] = []
    # Each probed entry with the write recording what its probe found, and whether it still holds.
    checks: list[tuple[KnowledgeEntry, Commit, bool]] = []
    for entry in batch:
        if is_fresh(entry, now, ttl):
            passing.append((entry, entry.checked_at or now))
            continue
        answer = verdict(probe_dependency(dep, tree, named) for dep in entry.dependencies)
        match answer.outcome:
            case "unchanged":
                checks.append((entry, Commit(events=(EntryRevalidated(at=now, id=entry.id, version=entry.version),)),
                               True))
            case "changed":
                staled = EntryStaled(at=now, id=entry.id, version=entry.version, reason=answer.detail)
                checks.append((entry, Commit(events=(staled,)), False))
            case _:
                pass
    outcomes = context.write_each([commit for _, commit, _ in checks]) if checks else []
    passing += [
        (entry, now) for (entry, _, holds), error in zip(checks, outcomes, strict=True) if holds and error is None
    ]
    return passing


def _still_as_read(context: Context, served: Sequence[tuple[KnowledgeEntry, float]]) -> list[ContextEntry]:
    with context.store.reader() as reader:
        current = {entry.id: reader.get(KNOWLEDGE_ENTRIES, entry.id) for entry, _ in served}
    return [
        _context_entry(entry, checked_at)
        for entry, checked_at in served
        if (now := current[entry.id]) is not None and now.state == "verified" and now.version == entry.version
    ]


def _context_entry(entry: KnowledgeEntry, checked_at: float) -> ContextEntry:
    return ContextEntry(
        id=entry.id, project=entry.project, repository=entry.repository, kind=entry.kind, title=entry.title,
        body=entry.body, visibility=entry.visibility, owner=entry.owner, sources=entry.sources,
        verified_at=entry.verified_at or 0.0, checked_at=checked_at,
    )
