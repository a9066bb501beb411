"""What a format parser produces, and the small readers every parser shares.

A parser turns a file's lines into `Entry`s in file order — one per line, each with the format's
own id and parent id where it has them, and the turns (`Draft`s) the line holds (none for
bookkeeping lines) — plus what the file says about itself (`Meta`). Ordering by parent links,
numbering and bounding happen afterwards, the same for every format (`resident.sessions.order`).
Every reader here takes whatever a hostile file holds (a number where text belongs, a list where
a mapping belongs) and returns a neutral value instead of failing.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from resident.messages.sessions import TurnKind, TurnRole
from resident.sessions.lines import Line

__all__ = [
    "MAX_TOOL_INPUT_CHARS",
    "Draft",
    "Entry",
    "Meta",
    "Parsed",
    "clean_id",
    "compact",
    "epoch",
    "not_a_mapping",
    "raw_draft",
    "string",
    "text_of",
]

# A tool call's input is shown compactly and cut here: the raw transcript keeps all of it.
MAX_TOOL_INPUT_CHARS = 4_000
MAX_RAW_CHARS = 2_000
# A hostile file could name a new kind on every line: only so many are counted by name.
_MAX_UNKNOWN_KINDS = 50
_MAX_KIND_CHARS = 60
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}")


@dataclass(frozen=True, slots=True)
class Draft:
    """One turn before numbering: who, what kind, the text, and the tool it concerns."""

    role: TurnRole
    kind: TurnKind
    text: str
    tool: str = ""
    call: str = ""
    at: float | None = None


@dataclass(slots=True)
class Entry:
    """One line of a transcript: its id and parent id (when the format has them) and its turns."""

    node: str = ""
    parent: str = ""
    drafts: list[Draft] = field(default_factory=list)
    # The line continues the conversation (a message), so the last such line is the leaf of its path.
    conversational: bool = False


@dataclass(slots=True)
class Meta:
    """What a transcript says about itself."""

    external_id: str = ""
    title: str = ""
    cwd: str = ""
    started_at: float | None = None
    forked_from: str = ""
    # What the harness said of itself (never turns): the model, its own version, how many tool, agent or
    # skill listings it attached, how many lines of its bookkeeping and of injected context (instructions,
    # environment blocks, the projected AGENTS.md) it wrote, and the record kinds this parser does not know.
    model: str = ""
    version: str = ""
    listings: int = 0
    bookkeeping: int = 0
    injected: int = 0
    unknown: dict[str, int] = field(default_factory=dict)

    def count_unknown(self, kind: object) -> None:
        """Count a record kind the parser does not know (its name as the file spells it, bounded)."""
        name = kind if isinstance(kind, str) and kind else "(none)"
        if len(self.unknown) < _MAX_UNKNOWN_KINDS or name[:_MAX_KIND_CHARS] in self.unknown:
            self.unknown[name[:_MAX_KIND_CHARS]] = self.unknown.get(name[:_MAX_KIND_CHARS], 0) + 1


@dataclass(slots=True)
class Parsed:
    meta: Meta
    entries: list[Entry]


def string(value: Any) -> str:
    """`value` if it is a string, else ""."""
    return value if isinstance(value, str) else ""


def clean_id(value: Any) -> str:
    """An id from a transcript, safe as part of a store key: as it is when tame, else its digest."""
    text = string(value)
    if not text:
        return ""
    if _SAFE_ID.fullmatch(text):
        return text
    return "sha256-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def epoch(value: Any) -> float | None:
    """Seconds since the epoch from an ISO 8601 string or epoch milliseconds; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value) / 1000.0
        return seconds if math.isfinite(seconds) and 0 <= seconds < 1e11 else None
    text = string(value)
    if not text or len(text) > 64:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp()


def compact(value: Any, limit: int = MAX_TOOL_INPUT_CHARS) -> str:
    """`value` as compact JSON text (a string stays itself), cut at `limit` characters."""
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "…"


def text_of(content: Any) -> str:
    """The text of message content: a string, or the text of its blocks (`[image]` for an image)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    pieces: list[str] = []
    for block in content:
        if isinstance(block, str):
            pieces.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind in ("text", "input_text", "output_text", "summary_text", "reasoning_text"):
                pieces.append(string(block.get("text")))
            elif kind in ("image", "input_image"):
                pieces.append("[image]")
            elif kind == "tool_result":
                pieces.append(text_of(block.get("content")))
    return "\n".join(piece for piece in pieces if piece)


def raw_draft(line: Any, at: float | None = None) -> Draft:
    """A line of a type the parser does not know: kept as compact JSON (bounded), never dropped."""
    return Draft("other", "raw", compact(line, MAX_RAW_CHARS), at=at)


def not_a_mapping(line: Line) -> Entry:
    """The entry of a line that is not a JSON object: its text if it is not JSON at all, else kept raw."""
    if line.value is None:
        return Entry(drafts=[Draft("other", "unparsed", line.text)])
    return Entry(drafts=[raw_draft(line.value)])
