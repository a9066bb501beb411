"""Reading `resident remember MEMBER --jsonl FILE|-`: one JSON object a line, bounded, errors by line number.

The whole input is read before anything is written, within bounds that make it one
`remember_many` call: at most `MAX_REMEMBER_ITEMS` lines that hold an item, each at most
`MAX_LINE_BYTES`, and at most `MAX_REMEMBER_MANY_BODY_BYTES` in all. Input past a bound is
refused whole, before anything is written. A line that is not UTF-8 or not JSON is reported with
its number and left out, as is an object that names a key twice; every other line goes to the
runtime, which refuses a bad item in its place.
Blank lines are skipped (they still count in the numbering).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from resident.errors import InvalidInput, shorten
from resident.messages.memory_calls import MAX_REMEMBER_ITEMS, MAX_REMEMBER_MANY_BODY_BYTES
from resident.operations.declaration import MAX_BODY_BYTES
from resident.user_files import open_user_file

__all__ = ["MAX_LINE_BYTES", "Lines", "read_jsonl"]

# A line holds one remember: the longest one, every character escaped as \\uXXXX, fits.
MAX_LINE_BYTES = MAX_BODY_BYTES


@dataclass
class Lines:
    """The items read (each with its line number) and the lines refused before any was sent."""

    items: list[tuple[int, Any]] = field(default_factory=list)
    refused: list[tuple[int, str, str]] = field(default_factory=list)  # line, error type, message


def read_jsonl(source: str) -> Lines:
    """The lines of `source` (a path, or `-` for standard input), checked and bounded as above."""
    if source == "-":
        return _read(sys.stdin.buffer, "standard input")
    # A FIFO, a device or a link named here is refused at once (never waited on or followed).
    with open_user_file(Path(source), what="--jsonl") as stream:
        return _read(stream, source)


def _read(stream: IO[bytes], name: str) -> Lines:
    lines = Lines()
    total = 0
    number = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return lines
        number += 1
        total += len(raw)
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            total += _skip_line(stream)
            lines.refused.append((number, "InvalidInput", f"longer than {MAX_LINE_BYTES} bytes; shorten it"))
        elif raw.strip():
            _parse(raw, number, lines)
        if total > MAX_REMEMBER_MANY_BODY_BYTES:
            raise InvalidInput(
                f"{name} holds more than {MAX_REMEMBER_MANY_BODY_BYTES} bytes; nothing was written, split it"
            )
        if len(lines.items) + len(lines.refused) > MAX_REMEMBER_ITEMS:
            raise InvalidInput(
                f"{name} holds more than {MAX_REMEMBER_ITEMS} memories; nothing was written, split it"
            )


def _skip_line(stream: IO[bytes]) -> int:
    """Read past the rest of an overlong line; how many bytes that was."""
    skipped = 0
    while chunk := stream.readline(MAX_LINE_BYTES):
        skipped += len(chunk)
        if chunk.endswith(b"\n") or skipped > MAX_REMEMBER_MANY_BODY_BYTES:
            break
    return skipped


def _parse(raw: bytes, number: int, lines: Lines) -> None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        lines.refused.append((number, "TextInvalid", f"not valid UTF-8 (byte {error.start}); send UTF-8 text"))
        return
    try:
        item = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as duplicate:
        lines.refused.append((number, "InvalidInput", f"the key {duplicate} appears twice; give each field once"))
        return
    except ValueError as error:
        lines.refused.append((number, "InvalidInput", f"not JSON ({error}); give one JSON object a line"))
        return
    except RecursionError:
        lines.refused.append((number, "InvalidInput", "nested too deeply; give one flat JSON object a line"))
        return
    lines.items.append((number, item))


class _DuplicateKey(Exception):
    """A JSON object names one key twice: which value was meant is anyone's guess, so the line is refused."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    item: dict[str, Any] = {}
    for key, value in pairs:
        if key in item:
            raise _DuplicateKey(shorten(key))
        item[key] = value
    return item
