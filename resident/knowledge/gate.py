"""The ingest gate: which drafted pages a bank admits, which it already holds, and which it refuses.

A page is admitted whole or not at all. The gate refuses a page whose kind is not one a bank holds,
whose title is missing or too long, whose text is empty or longer than `MAX_PAGE_CHARS`, or which
holds control characters (binary data, or escape sequences that would rewrite a terminal when
the page is printed). A page whose content digest the bank already holds, or that appeared earlier
in the same ingest, is skipped: one bank keeps one copy of a text.

The digest covers kind, title and body, so the same paragraph under two headings is two pages.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from resident.knowledge.pages import MAX_PAGE_CHARS, Draft
from resident.messages.knowledge import PageKind

__all__ = [
    "MAX_TITLE_CHARS",
    "PAGE_KINDS",
    "Admit",
    "Duplicate",
    "Refuse",
    "Verdict",
    "holds_control_characters",
    "judge",
    "page_digest",
]

MAX_TITLE_CHARS = 200
PAGE_KINDS: frozenset[PageKind] = frozenset({"markdown", "text"})
# C0 controls but tab, newline and carriage return; DEL; C1 controls. Spelled as the complement of
# what may appear, which the regular expression engine tests in fewer steps per character (a third
# less time over a page).
_CONTROL = re.compile(r"[^\t\n\r\x20-\x7e\xa0-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class Admit:
    """The page passes: its cleaned title and its digest."""

    title: str
    digest: str


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The bank (or this ingest) already holds this text; `where` says which page or file."""

    digest: str
    where: str


@dataclass(frozen=True, slots=True)
class Refuse:
    """The page is refused; `reason` says why and what to change."""

    reason: str


Verdict = Admit | Duplicate | Refuse


def holds_control_characters(text: str) -> bool:
    """Whether `text` holds characters that are neither text nor tab, newline or carriage return."""
    return _CONTROL.search(text) is not None


def page_digest(kind: str, title: str, body: str) -> str:
    """The SHA-256 of a page's content: kind, title and body, NUL-separated."""
    return hashlib.sha256(f"{kind}\0{title}\0{body}".encode()).hexdigest()


def judge(draft: Draft, held: Callable[[str], str | None]) -> Verdict:
    """The gate's verdict on one draft; `held(digest)` names where that text already is, if anywhere."""
    title = " ".join(draft.title.split())
    refusal = _refusal(draft, title)
    if refusal is not None:
        return Refuse(refusal)
    digest = page_digest(draft.kind, title, draft.body)
    where = held(digest)
    if where is not None:
        return Duplicate(digest, where)
    return Admit(title, digest)


def _refusal(draft: Draft, title: str) -> str | None:
    if draft.kind not in PAGE_KINDS:
        return f"kind {draft.kind!r} is not one a bank holds ({', '.join(sorted(PAGE_KINDS))})"
    if not title:
        return "the section has no title; give its heading some text"
    if len(title) > MAX_TITLE_CHARS:
        return f"the title is {len(title)} characters; the limit is {MAX_TITLE_CHARS}"
    if not draft.body.strip():
        return "the page is empty"
    if len(draft.body) > MAX_PAGE_CHARS:
        return (
            f"the page is {len(draft.body)} characters; the limit is {MAX_PAGE_CHARS} — split it with more headings"
        )
    if holds_control_characters(draft.body) or holds_control_characters(title):
        return "the page holds control characters (binary data or terminal escapes); remove them"
    return None
