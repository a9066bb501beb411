"""Candidates: the `knowledge_candidate` an implementation step may hand in, and the entry it makes.

Only a step with role `implement` that succeeded with a `complete` result may propose a candidate,
and only as an explicit object of exactly these fields::

    {"kind": "fact", "title": "One writer per worktree",
     "body": "The coordinator keeps a single active writer.", "visibility": "project"}

(plus, optionally, `"supersedes": ENTRY_ID` for a decision that replaces a verified one). The host —
this runtime — sets everything else from its own records: project and repository from the work
the step was dispatched on, the owner (the member who did it), the sources (the step, and the
files the step names, hashed by the host), the provider and the fingerprint. A candidate that
tries to set any of those, or is malformed in any way, is invalid, and an invalid candidate fails
the step before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from resident.errors import CandidateInvalid
from resident.knowledge.gate import MAX_TITLE_CHARS, holds_control_characters
from resident.knowledge.pages import MAX_PAGE_CHARS
from resident.messages.coordination import Execution, Outcome, StepResult
from resident.messages.knowledge import Dependency, EntryKind, EntrySource, KnowledgeEntry, Visibility

__all__ = ["HOST_FIELDS", "Candidate", "check_step", "parse_candidate", "propose"]

HOST_FIELDS = frozenset({"repository", "project", "owner", "source", "sources", "provider", "fingerprint",
                         "dependencies", "state", "id", "evidence", "verified"})
_ENTRY_ID = re.compile(r"kn_[0-9a-f]{28}")


class Candidate(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A `knowledge_candidate` object as an agent may write it (nothing more)."""

    kind: EntryKind
    title: str
    body: str
    visibility: Visibility
    supersedes: str | None = None


def parse_candidate(raw: Mapping[str, Any] | str | bytes) -> Candidate:
    """The candidate an agent handed in (an object, or its JSON), checked; `CandidateInvalid` otherwise."""
    if isinstance(raw, Mapping):
        host = sorted(HOST_FIELDS & set(raw))
        if host:
            raise CandidateInvalid(f"a knowledge_candidate may not set {', '.join(host)}; the host sets it")
        try:
            candidate = msgspec.convert(raw, Candidate, strict=True)
        except msgspec.ValidationError as error:
            raise CandidateInvalid(f"the knowledge_candidate is invalid: {error}") from None
    else:
        try:
            decoded = msgspec.json.decode(raw)
        except msgspec.DecodeError as error:
            raise CandidateInvalid(f"the knowledge_candidate is not JSON: {error}") from None
        if not isinstance(decoded, dict):
            raise CandidateInvalid("the knowledge_candidate must be a JSON object")
        return parse_candidate(decoded)
    return _checked(candidate)


def _checked(candidate: Candidate) -> Candidate:
    title = candidate.title.strip()
    body = candidate.body.strip()
    if not title or not body:
        raise CandidateInvalid("a knowledge_candidate needs a title and a body")
    if len(title) > MAX_TITLE_CHARS or len(body) > MAX_PAGE_CHARS:
        raise CandidateInvalid(
            f"a knowledge_candidate's title may hold {MAX_TITLE_CHARS} characters and its body {MAX_PAGE_CHARS}"
        )
    if holds_control_characters(title) or holds_control_characters(body):
        raise CandidateInvalid("the knowledge_candidate holds control characters; remove them")
    if candidate.supersedes is not None and not _ENTRY_ID.fullmatch(candidate.supersedes):
        raise CandidateInvalid(f"supersedes must name an entry id (kn_…), not {candidate.supersedes!r}")
    return msgspec.structs.replace(candidate, title=title, body=body)


def check_step(execution: Execution, outcome: Outcome, result: StepResult) -> None:
    """Refuse a candidate from a step that may not propose one (role, outcome, result, work)."""
    if execution.role != "implement":
        raise CandidateInvalid(
            f"only an implement step may propose knowledge; {execution.id} is a {execution.role} step"
        )
    if outcome != "succeeded" or result != "complete":
        raise CandidateInvalid(
            f"a knowledge_candidate needs a step that succeeded with a complete result, not {outcome}/{result or '-'}"
        )
    if execution.work is None or not execution.fingerprint:
        raise CandidateInvalid(
            f"step {execution.id} was dispatched without a work item (project, repository, item, tree, model, scope)"
        )


def propose(
    execution: Execution,
    candidate: Candidate,
    files: Iterable[tuple[str, str]],
    *,
    entry_id: str,
    now: float,
) -> KnowledgeEntry:
    """The candidate entry the host makes: `files` are (path, SHA-256) of the files the step named."""
    work = execution.work
    if work is None:  # check_step refused it already; kept for the type checker
        raise CandidateInvalid(f"step {execution.id} has no work item")
    files = tuple(files)
    sources = (
        EntrySource(kind="execution", ref=execution.id, digest=execution.fingerprint),
        *(EntrySource(kind="file", ref=path, digest=digest) for path, digest in files),
    )
    dependencies = (
        *(Dependency(kind="file", ref=path, digest=digest, generation=work.tree) for path, digest in files),
        Dependency(kind="provider", ref=work.model, generation=work.model, provider=work.provider),
    )
    return KnowledgeEntry(
        id=entry_id, project=work.project, repository=work.repository, kind=candidate.kind, title=candidate.title,
        body=candidate.body, visibility=candidate.visibility, owner=execution.member, state="candidate", version=1,
        created_at=now, changed_at=now, sources=sources, dependencies=dependencies,
        provider=work.provider or work.model, fingerprint=execution.fingerprint, execution=execution.id,
        supersedes=candidate.supersedes, checked_at=now,
    )
