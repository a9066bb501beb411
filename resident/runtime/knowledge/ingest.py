"""Ingest: files and folders into a knowledge bank, through the gate, one durable write per file.

Every argument is checked before anything is written (a path that does not exist fails the whole
ingest). Folders are walked in name order; hidden entries (`.git`, `.cache`, ...) are passed over
and symbolic links inside a folder are not followed (each is reported). Only Markdown and plain
text files are taken from a folder; a file named explicitly that is neither is reported rejected.

Each file is read once (at most `MAX_FILE_BYTES`, strict UTF-8, no NUL bytes), identified by its
resolved path and the SHA-256 of its bytes, split into pages and judged page by page by the gate.
A file whose digest is the one last ingested into the bank admits nothing. A changed file keeps its
pages whose text did not change, supersedes the others and admits its new ones; all of that, with
the file's new source record, is one write that lands whole or not at all (and is refused whole if
another ingest of the same file or text landed meanwhile). Writes go to the writer a window of
files at a time, so they share commits, and while one window commits the next is read and
planned; the indexer is nudged after each window so indexing runs beside both. The ingest returns
once the index holds every admitted page.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resident.errors import IngestInvalid, ResidentError
from resident.ids import new_id
from resident.knowledge.gate import Admit, Duplicate, judge
from resident.knowledge.pages import kind_of, split_document
from resident.messages.knowledge import (
    CatchUpIndex,
    IngestReport,
    Page,
    PageAdmitted,
    PageKind,
    PageSource,
    PageSuperseded,
    Rejection,
    Skip,
    SourceIngested,
    SourceRecord,
)
from resident.messages.store import Commit
from resident.runtime.context import Context, PendingWrites
from resident.store.projections import page_key
from resident.store.store import Reader
from resident.store.tables import PAGE_DIGESTS, PAGE_SOURCES, PAGES
from resident.user_files import read_user_file

__all__ = ["MAX_FILE_BYTES", "SLOWEST_INDEXING", "WINDOW_FILES", "Progress", "held_in_bank", "ingest"]

MAX_FILE_BYTES = 8 * 1024 * 1024
# Files planned and handed to the writer together: their writes share commits.
WINDOW_FILES = 64
# Pages per second the indexer is assumed to manage at the least (a tenth of what it does on an idle
# machine) when the ingest waits for it to hold every page.
SLOWEST_INDEXING = 300.0
Progress = Callable[[int, int], None]
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class _Source:
    path: Path
    kind: PageKind


@dataclass
class _Tally:
    """What the ingest did so far."""

    admitted: list[str] = field(default_factory=list)
    superseded: int = 0
    skipped: list[Skip] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    # Digests admitted earlier in this ingest, and where, so a repeat is skipped, not refused.
    seen: dict[str, str] = field(default_factory=dict)


def ingest(
    context: Context, bank: str, paths: Sequence[str | os.PathLike[str]], progress: Progress | None = None
) -> IngestReport:
    """Ingest `paths` (files and folders) into `bank`; the caller checked the bank and who asks."""
    tally = _Tally()
    sources = _collect(paths, tally)
    total = len(sources)
    if progress is not None:
        progress(0, total)
    indexer = context.knowledge
    # One window is read and planned while the previous one's writes commit.
    in_flight: tuple[list[_Plan], PendingWrites] | None = None
    for start in range(0, total, WINDOW_FILES):
        window = sources[start : start + WINDOW_FILES]
        plans = [plan for plan in (_plan(context, bank, source, tally) for source in window) if plan is not None]
        sent = (plans, context.send_each([plan.commit for plan in plans]))
        if in_flight is not None:
            _count(*in_flight, tally)
            if indexer is not None:
                indexer.tell(CatchUpIndex(commit=False))
            if progress is not None:
                progress(start, total)
        in_flight = sent
    if in_flight is not None:
        _count(*in_flight, tally)
    if progress is not None:
        progress(total, total)
    if indexer is not None:
        # The index may trail the writes by a large ingest's worth; give it the time that takes.
        indexer.ask(CatchUpIndex(), max(indexer.default_timeout, len(tally.admitted) / SLOWEST_INDEXING))
    return IngestReport(
        bank=bank, files=total, admitted=len(tally.admitted), superseded=tally.superseded,
        skipped=tuple(tally.skipped), rejected=tuple(tally.rejected), pages=tuple(tally.admitted),
    )


# -- finding the files ---------------------------------------------------------------------------


def _collect(paths: Sequence[str | os.PathLike[str]], tally: _Tally) -> list[_Source]:
    if not paths:
        raise IngestInvalid("name at least one file or folder to ingest")
    roots = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise IngestInvalid(f"{path} does not exist; name files or folders to ingest")
        roots.append(path)
    found: dict[Path, _Source] = {}
    for root in roots:
        for source in _walk(root, tally, explicit=True):
            found.setdefault(source.path, source)
    return list(found.values())


def _walk(path: Path, tally: _Tally, *, explicit: bool) -> Iterator[_Source]:
    # No link is followed, named or found: what is read is the file the path names, never a private
    # file elsewhere a link in a shared folder (or a pasted path) points to.
    if path.is_symlink():
        reason = (
            "a symbolic link; name the file or folder it points to" if explicit
            else "a symbolic link inside a folder is not followed"
        )
        tally.rejected.append(Rejection(path=_shown(path), reason=reason))
        return
    if path.is_dir():
        for child in sorted(path.iterdir()):
            if not child.name.startswith("."):
                yield from _walk(child, tally, explicit=False)
        return
    kind = kind_of(path.suffix)
    if kind is None:
        if explicit:
            tally.rejected.append(Rejection(path=_shown(path), reason="not Markdown (.md) or plain text (.txt)"))
        return
    yield _Source(path=path.resolve(), kind=kind)


def _shown(path: Path) -> str:
    """A path as reports show it: undecodable bytes of a file name escaped, so it stays valid text."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


# -- planning one file's write -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Plan:
    path: str
    commit: Commit
    admitted: tuple[str, ...]
    digests: tuple[tuple[str, str], ...]
    superseded: int


def _read(source: _Source) -> tuple[str, str, bytes] | str:
    """(stored path, SHA-256, bytes) of a file, or why it cannot be ingested."""
    shown = _shown(source.path)
    if shown != str(source.path):
        return "the file name is not valid UTF-8; rename the file"
    try:
        # Non-blocking open: a FIFO named `notes.md` in a folder is refused, not waited on forever.
        data = read_user_file(source.path, limit=MAX_FILE_BYTES, what="the file", error=IngestInvalid)
    except IngestInvalid as refused:
        return refused.message
    return shown, hashlib.sha256(data).hexdigest(), data


def _decode(data: bytes) -> str:
    text = data.decode("utf-8")
    if "\0" in text:
        raise UnicodeError("it holds NUL bytes (binary data?)")
    return text.removeprefix(_BOM)


@dataclass(frozen=True, slots=True)
class _File:
    """A file read for ingest: its identity (stored path, SHA-256) and its text."""

    source: _Source
    path: str
    sha256: str
    text: str


def _plan(context: Context, bank: str, source: _Source, tally: _Tally) -> _Plan | None:
    read = _read(source)
    if isinstance(read, str):
        tally.rejected.append(Rejection(path=_shown(source.path), reason=read))
        return None
    path, sha256, data = read
    with context.store.reader() as reader:
        previous = reader.get(PAGE_SOURCES, page_key(bank, path))
        if previous is not None and previous.sha256 == sha256:
            tally.skipped.append(Skip(path=path, reason="unchanged since it was last ingested"))
            return None
        try:
            text = _decode(data)
        except UnicodeError as error:
            reason = f"not valid UTF-8 (byte {error.start})" if isinstance(error, UnicodeDecodeError) else str(error)
            tally.rejected.append(Rejection(path=path, reason=reason))
            return None
        return _plan_pages(reader, bank, _File(source, path, sha256, text), previous, tally, now=context.clock.time())


def _active_pages(reader: Reader, page_ids: Sequence[str]) -> dict[str, Page]:
    """The still-active pages of a file's last ingest, by content digest."""
    pages = (reader.get(PAGES, page_id) for page_id in page_ids)
    return {page.digest: page for page in pages if page is not None and page.state == "active"}


def _plan_pages(
    reader: Reader, bank: str, file: _File, previous: SourceRecord | None, tally: _Tally, *, now: float
) -> _Plan:
    old = _active_pages(reader, previous.pages if previous is not None else ())
    admitted: list[Page] = []
    kept: list[str] = []

    def held(digest: str) -> str | None:
        if digest in old:
            return ""  # the file's own page, unchanged: kept, not a duplicate
        if digest in tally.seen:
            return f"the same text is in {tally.seen[digest]}"
        return held_in_bank(reader, bank, digest)

    for draft in split_document(file.text, file.source.kind, file.source.path.stem):
        verdict = judge(draft, held)
        match verdict:
            case Admit(title=title, digest=digest):
                page = Page(
                    id=new_id("page"), bank=bank, kind=draft.kind, title=title, body=draft.body, digest=digest,
                    source=PageSource(path=file.path, sha256=file.sha256), ordinal=draft.ordinal, admitted_at=now,
                )
                admitted.append(page)
                tally.seen[digest] = file.path
            case Duplicate(digest=digest, where=""):
                if old[digest].id not in kept:
                    kept.append(old[digest].id)
            case Duplicate(where=where):
                tally.skipped.append(Skip(path=file.path, title=draft.title, reason=f"duplicate: {where}"))
            case _:
                tally.rejected.append(Rejection(path=file.path, title=draft.title[:200], reason=verdict.reason))
    gone = [page for page in old.values() if page.id not in kept]
    replacement = {page.title: page.id for page in admitted}
    record = SourceRecord(
        bank=bank, path=file.path, sha256=file.sha256, pages=(*kept, *(page.id for page in admitted)),
        ingested_at=now,
    )
    events: list[Any] = [SourceIngested(at=now, source=record, previous=previous.sha256 if previous else "")]
    events += [PageSuperseded(at=now, id=page.id, by=replacement.get(page.title)) for page in gone]
    events += [PageAdmitted(at=now, page=page) for page in admitted]
    return _Plan(
        path=file.path, commit=Commit(events=tuple(events)), admitted=tuple(page.id for page in admitted),
        digests=tuple((page.digest, file.path) for page in admitted), superseded=len(gone),
    )


def held_in_bank(reader: Reader, bank: str, digest: str) -> str | None:
    """Where `bank` already holds an active page of that content digest (None: it does not)."""
    holder = reader.get(PAGE_DIGESTS, page_key(bank, digest))
    if holder is None:
        return None
    page = reader.get(PAGES, holder.page)
    if page is None or page.state != "active":
        return None
    return f"already in the bank as page {page.id} ({page.source.path})"


# -- writing -------------------------------------------------------------------------------------


def _count(plans: Sequence[_Plan], pending: PendingWrites, tally: _Tally) -> None:
    """Wait for a window's writes and count what each did."""
    for plan, error in zip(plans, pending.outcomes(), strict=True):
        if error is None:
            tally.admitted += plan.admitted
            tally.superseded += plan.superseded
            continue
        for digest, _ in plan.digests:
            tally.seen.pop(digest, None)
        message = error.message if isinstance(error, ResidentError) else str(error)
        tally.rejected.append(Rejection(path=plan.path, reason=f"nothing written: {message}"))
