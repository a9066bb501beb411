"""Search snippets: a short window of a page's text around the first place the query matches.

Matching folds case and accents the way search does (`resident.memory.text.normalize`), so
"cancion" finds "Canción"; Chinese query runs are looked for by their first two characters.
Whitespace inside the window is collapsed to single spaces so a snippet prints as one line.
"""

from __future__ import annotations

import re

from resident.memory.text import normalize

__all__ = ["SNIPPET_CHARS", "snippet"]

SNIPPET_CHARS = 200
_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def snippet(body: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """About `width` characters of `body` around the query's first match (its start if none)."""
    folded = normalize(body)
    at = 0
    # Folding can change a text's length (ß → ss); positions then no longer line up, and the
    # snippet falls back to the page's beginning rather than point at the wrong place.
    if len(folded) == len(body):
        found = [folded.find(needle) for needle in _needles(normalize(query))]
        at = min((position for position in found if position >= 0), default=0)
    start = max(0, at - width // 3)
    end = min(len(body), start + width)
    window = _SPACE.sub(" ", body[start:end]).strip()
    return ("…" if start else "") + window + ("…" if end < len(body) else "")


def _needles(query: str) -> list[str]:
    needles = []
    for word in _WORD.findall(query):
        if _CJK.match(word):
            needles.append(word[:2])
        elif len(word) > 1:
            needles.append(word)
    return needles
