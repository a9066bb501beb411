"""Recovering transcript files: redact, parse by harness, order, number, compress.

This is the one path from a harness's bytes to what the store keeps, for a session's end and an
import alike. Bounds keep a hostile or enormous file from taking the runtime down: at most
`MAX_FILE_BYTES` of a file are read (the rest is left, and the part is marked `truncated`),
`MAX_TURNS` turns a session, `MAX_TURN_CHARS` characters a turn; the raw bytes keep every line
that was read, redacted.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from resident.errors import StoreCorrupted
from resident.messages.sessions import Harness, RecoveredTranscript, SessionTurn, TranscriptPart
from resident.sessions import claude, codex, pi, plain
from resident.sessions.entries import Parsed, clean_id
from resident.sessions.lines import Line, redact_lines
from resident.sessions.order import number_turns
from resident.sessions.redaction import Redactor

__all__ = ["MAX_FILE_BYTES", "MAX_TURNS", "PARSERS", "TranscriptFile", "parse_file", "recover", "unpack"]

MAX_FILE_BYTES = 64 << 20
MAX_TURNS = 50_000
_TEXT_LIMIT = 1_000
PARSERS: dict[Harness, Callable[[list[Line]], Parsed]] = {
    "claude-code": claude.parse,
    "codex": codex.parse,
    "pi": pi.parse,
    "command": plain.parse,
}


@dataclass(frozen=True)
class TranscriptFile:
    """Bytes read from one transcript file: from `offset`, and whether the file held more than was read."""

    source: str
    data: bytes
    offset: int = 0
    truncated: bool = False


def parse_file(harness: Harness, data: bytes, redactor: Redactor) -> tuple[Parsed, list[Line], bytes]:
    """One file's bytes redacted, split and parsed: the parse, its lines, and the redacted bytes."""
    lines, redacted = redact_lines(data, redactor)
    return PARSERS[harness](lines), lines, redacted


def recover(harness: Harness, files: Sequence[TranscriptFile], redactor: Redactor) -> RecoveredTranscript:
    """Everything the store keeps of `files` (one part each, in order), redacted by `redactor`."""
    parts: list[TranscriptPart] = []
    turns: list[SessionTurn] = []
    raw: list[bytes] = []
    for index, file in enumerate(files):
        parsed, lines, redacted = parse_file(harness, file.data, redactor)
        numbered, cut = number_turns(parsed.entries, part=index, first=len(turns), limit=MAX_TURNS - len(turns))
        turns += numbered
        compressed = zlib.compress(redacted, 6)
        raw.append(compressed)
        meta = parsed.meta
        parts.append(
            TranscriptPart(
                index=index,
                source=redactor.redact(file.source)[:_TEXT_LIMIT],
                # A tail read from an offset has no header: the file's name still identifies it.
                external_id=meta.external_id or clean_id(PurePath(file.source).stem),
                title=meta.title[:_TEXT_LIMIT],
                cwd=meta.cwd[:_TEXT_LIMIT],
                started_at=meta.started_at,
                forked_from=meta.forked_from[:_TEXT_LIMIT],
                offset=file.offset,
                size=len(file.data),
                stored=len(compressed),
                digest=hashlib.sha256(redacted).hexdigest(),
                lines=len(lines),
                turns=len(numbered),
                unparsed=sum(line.value is None for line in lines),
                truncated=file.truncated or cut,
                model=meta.model[:_TEXT_LIMIT],
                harness_version=meta.version[:_TEXT_LIMIT],
                listings=meta.listings,
                bookkeeping=meta.bookkeeping,
                injected=meta.injected,
                unknown_kinds=tuple(sorted(meta.unknown.items())),
            )
        )
    return RecoveredTranscript(
        parts=tuple(parts), turns=tuple(turns), raw=tuple(raw), redactions=tuple(sorted(redactor.counts.items()))
    )


def unpack(data: bytes, part: TranscriptPart) -> bytes:
    """A part's stored raw bytes, decompressed (never past what a part may hold) and checked against its digest."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_FILE_BYTES + 1)
    except zlib.error as error:
        raise StoreCorrupted(f"the raw transcript of part {part.index} does not decompress ({error})") from None
    if len(raw) > MAX_FILE_BYTES or not inflater.eof or hashlib.sha256(raw).hexdigest() != part.digest:
        raise StoreCorrupted(f"the raw transcript of part {part.index} does not match its digest; it was altered")
    return raw
