"""Text for a terminal: stored and user text is shown, never obeyed.

A memory, a name, a plan step or an error message may hold terminal control sequences:
`ESC ] 0 ;` retitles the window, `ESC [ 2 J` clears it, a carriage return or backspaces overwrite
what was printed, a bidi override reorders a line so it reads differently than it is. The runtime
stores text as it was given (a pasted log with colour codes is a legitimate memory) and escapes
it where it is printed: `printable` shows each such character as an escape (`\\x1b`, `\\u202e`),
keeping tabs and newlines. See docs/bad-input.md.

This module imports nothing from the project.
"""

from __future__ import annotations

import re

__all__ = ["UNPRINTABLE", "printable"]

# C0 controls but tab and newline, DEL, C1 controls, the bidi marks, embeddings, overrides and
# isolates, and lone surrogates (a path of undecodable bytes, which no terminal encoding can print).
UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` safe to print on a terminal: control characters are shown as escapes, not obeyed."""
    return UNPRINTABLE.sub(_escape, text)
