"""What counts as the same content: the text Unicode-normalized (NFKC), case-folded and with its whitespace
collapsed, and the SHA-256 of that.

Realm refuses content it invalidated under any id, and a readmit of a withheld record must change its content:
both compare content keys, so a change of case, of spacing or of a compatibility character is no change. A leaf:
Realm and the runtime's memory rules use the same function.
"""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["content_key", "normalized_content"]


def normalized_content(text: str) -> str:
    """`text` as it is compared: NFKC, case-folded, every run of whitespace one space, trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def content_key(text: str) -> str:
    """The SHA-256 (hex) of `text`'s normalized content."""
    return hashlib.sha256(normalized_content(text).encode("utf-8")).hexdigest()
