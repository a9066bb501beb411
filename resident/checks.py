"""Text a caller hands in that is stored and later printed: checked for characters a terminal would act on.

A leaf: skills, evolution, engagement and the runtime's services all check names, reasons and notes here.
"""

from __future__ import annotations

import re

from resident.errors import InvalidInput, TextInvalid

__all__ = ["clean_line", "printable"]

# C0 controls except tab, newline and carriage return; DEL; C1 controls (escape sequences start here).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def printable(text: str, what: str, error: type[InvalidInput] = TextInvalid) -> str:
    """`text` unless it holds a control character a terminal would act on (then `error`)."""
    found = _CONTROL.search(text)
    if found is not None:
        character = f"U+{ord(found.group()):04X}"
        raise error(f"{what} holds the control character {character} at offset {found.start()}; remove it")
    return text


def clean_line(value: object, what: str, limit: int) -> str:
    """`value` as stripped, printable, non-blank text of at most `limit` characters (`TextInvalid` otherwise)."""
    if not isinstance(value, str):
        raise TextInvalid(f"{what} must be text, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise TextInvalid(f"{what} is not valid UTF-8 (character {error.start}); send UTF-8 text") from None
    text = printable(value.strip(), what)
    if not text:
        raise TextInvalid(f"{what} is empty")
    if len(text) > limit:
        raise TextInvalid(f"{what} is {len(text)} characters; the limit is {limit}")
    return text
