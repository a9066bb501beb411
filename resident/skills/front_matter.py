"""YAML front matter of Markdown files (SKILL.md, soul.md): split, parse safely, bound.

The front matter is the block between a first line `---` and the next line `---`. It is parsed
with PyYAML's safe loader only (no Python objects), after two bounds a hostile file could
otherwise abuse: its size, and anchors/aliases (which let a few bytes expand into a huge
structure once something walks it). The whole file must be UTF-8 text without terminal control
characters, since its strings are printed on terminals and written into other harnesses' files.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from resident.checks import printable
from resident.errors import SkillInvalid

__all__ = ["MAX_FRONT_MATTER", "check_printable", "decode_text", "split_front_matter"]

MAX_FRONT_MATTER = 8 * 1024
# libyaml's safe loader builds the same plain values as PyYAML's, several times faster.
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DELIMITER = re.compile(r"^---[ \t]*\r?$", re.MULTILINE)


def decode_text(data: bytes, what: str) -> str:
    """`data` as UTF-8 text (a leading byte-order mark is dropped), else `SkillInvalid`."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkillInvalid(f"{what} is not valid UTF-8 (byte {error.start}); save it as UTF-8") from None
    return text.removeprefix("\ufeff")


def check_printable(text: str, what: str) -> str:
    """`text` unless it holds a control character a terminal would act on."""
    return printable(text, what, SkillInvalid)


def split_front_matter(text: str, what: str) -> tuple[dict[str, Any], str]:
    """The front matter of `text` as a mapping, and the Markdown body after it."""
    check_printable(text, what)
    lines = text.split("\n", 1)
    if not _DELIMITER.fullmatch(lines[0]) or len(lines) == 1:
        raise SkillInvalid(f"{what} must start with YAML front matter: a line `---`, the fields, then `---`")
    closing = _DELIMITER.search(lines[1])
    if closing is None:
        raise SkillInvalid(f"{what}: the front matter has no closing `---` line")
    header, body = lines[1][: closing.start()], lines[1][closing.end() :].lstrip("\r\n")
    if len(header.encode("utf-8")) > MAX_FRONT_MATTER:
        raise SkillInvalid(f"{what}: the front matter is over {MAX_FRONT_MATTER} bytes; keep it to the fields")
    return _parse_mapping(header, what), body


def _parse_mapping(header: str, what: str) -> dict[str, Any]:
    try:
        for event in yaml.parse(header, Loader=_SAFE_LOADER):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise SkillInvalid(f"{what}: YAML anchors and aliases are not allowed in front matter")
        data = yaml.load(header, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader, libyaml's when present
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or "malformed YAML"
        raise SkillInvalid(f"{what}: the front matter is not valid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        raise SkillInvalid(f"{what}: the front matter must be a mapping of field names to values")
    return data
