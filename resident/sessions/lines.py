"""A transcript file's lines, redacted: decoded JSON for the parsers, redacted bytes for the store.

Every line is redacted before a parser sees it, so the normalized turns are built from redacted
values only. A JSON line is decoded, every string in it redacted (decoded, so escapes hide
nothing) and, only if something was replaced, encoded again; a line with nothing to redact keeps
its bytes exactly. A line that is not JSON (or is too long to decode) is redacted as text, its
undecodable bytes kept as they were. Blank lines are kept in the bytes and skipped otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from resident.sessions.redaction import Redactor

__all__ = ["MAX_LINE_BYTES", "Line", "redact_lines"]

# A line longer than this is not decoded: it is kept as (redacted) text. Real transcript lines
# holding a pasted file or a large tool output stay well below it.
MAX_LINE_BYTES = 8 << 20
_ENCODER = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class Line:
    """One non-blank line: `value` is its decoded JSON (redacted), else None and `text` its redacted text."""

    number: int
    value: Any
    text: str = ""


def _decode(chunk: bytes) -> Any:
    if len(chunk) > MAX_LINE_BYTES:
        return None
    try:
        return msgspec.json.decode(chunk)
    except msgspec.DecodeError:
        return None


def redact_lines(data: bytes, redactor: Redactor) -> tuple[list[Line], bytes]:
    """The lines of `data` for the parsers, and `data` itself redacted (same layout, line for line)."""
    lines: list[Line] = []
    kept: list[bytes] = []
    for number, chunk in enumerate(data.split(b"\n"), start=1):
        body = chunk.removesuffix(b"\r")
        if not body.strip():
            kept.append(chunk)
            continue
        value = _decode(body)
        if value is None:
            text = redactor.redact(body.decode("utf-8", "surrogateescape"))
            kept.append(text.encode("utf-8", "surrogateescape") + chunk[len(body) :])
            lines.append(Line(number, None, text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")))
            continue
        before = sum(redactor.counts.values())
        value = redactor.redact_json(value)
        changed = sum(redactor.counts.values()) != before
        kept.append(_ENCODER.encode(value) + chunk[len(body) :] if changed else chunk)
        lines.append(Line(number, value))
    return lines, b"\n".join(kept)
