"""Legacy import: older knowledge, kept as `legacy_unverified` and never treated as fact.

The file is JSON Lines (one object per line) or one JSON array of objects, each with `project`,
`repository`, `kind`, `title` and `body`, and optionally `visibility` (default `project`),
`owner`, `sources` (`[{"ref", "digest"}]`), `created_at`, and the `id` and `state` the older store
gave it. Whatever state the old data claims, it enters as `legacy_unverified`: no evidence came
with it. An entry's id is derived from its content, so importing the same file twice adds nothing.
Any malformed object refuses the whole file, naming its line (or index).
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from resident.errors import InvalidInput
from resident.knowledge.candidate import Candidate, parse_candidate
from resident.knowledge.repositories import check_ref
from resident.messages.knowledge import EntryKind, EntrySource, KnowledgeEntry, Visibility

__all__ = ["LegacyEntry", "legacy_entries"]


class LegacySource(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    ref: str
    digest: str = ""


class LegacyEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One object of a legacy file."""

    project: str
    repository: str
    kind: EntryKind
    title: str
    body: str
    visibility: Visibility = "project"
    owner: str = ""
    sources: tuple[LegacySource, ...] = ()
    created_at: float | None = None
    id: str | None = None
    state: str | None = None


def legacy_entries(data: bytes, source: str, *, now: float) -> list[KnowledgeEntry]:
    """The entries a legacy file holds, as `legacy_unverified`; `InvalidInput` naming the bad object."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInput(f"{source} is not valid UTF-8 (byte {error.start})") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            objects: list[tuple[str, Any]] = [
                (f"item {index}", value) for index, value in enumerate(msgspec.json.decode(stripped))
            ]
        except msgspec.DecodeError as error:
            raise InvalidInput(f"{source} is not a JSON array of entries: {error}") from None
    else:
        objects = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    objects.append((f"line {number}", msgspec.json.decode(line)))
                except msgspec.DecodeError as error:
                    raise InvalidInput(f"{source} line {number} is not JSON: {error}") from None
    return [_entry(value, f"{source} {where}", now) for where, value in objects]


def _entry(value: Any, where: str, now: float) -> KnowledgeEntry:
    try:
        legacy = msgspec.convert(value, LegacyEntry, strict=True)
        project, repository = check_ref("project", legacy.project), check_ref("repository", legacy.repository)
        # The same checks as a candidate's text: a title and body of sane size, no control characters.
        text: Candidate = parse_candidate(
            {"kind": legacy.kind, "title": legacy.title, "body": legacy.body, "visibility": legacy.visibility}
        )
    except (msgspec.ValidationError, InvalidInput) as error:
        raise InvalidInput(f"{where}: {error}") from None
    if legacy.visibility == "private" and not legacy.owner:
        raise InvalidInput(f"{where}: a private entry needs its owner")
    identity = msgspec.msgpack.encode([project, repository, text.kind, text.title, text.body])
    created = legacy.created_at if legacy.created_at is not None else now
    reason = "imported from older data" + (f" (was {legacy.id}, {legacy.state})" if legacy.id or legacy.state else "")
    return KnowledgeEntry(
        id="kn_" + hashlib.sha256(identity).hexdigest()[:28], project=project, repository=repository,
        kind=text.kind, title=text.title, body=text.body, visibility=text.visibility, owner=legacy.owner or "owner",
        state="legacy_unverified", version=1, created_at=created, changed_at=now,
        sources=tuple(EntrySource(kind="url" if "://" in s.ref else "file", ref=s.ref, digest=s.digest)
                      for s in legacy.sources),
        reason=reason,
    )
