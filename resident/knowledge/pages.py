"""Splitting a document into pages: Markdown by its headings, plain text by paragraphs.

A Markdown page is one section: a heading (ATX `#`..`######`, or a setext underline) and the text
up to the next heading of any level. Headings inside fenced code blocks are code, not structure.
Text before the first heading becomes a page titled by the file's name. A heading whose section
holds no text is structure, not content, and makes no page. A YAML front-matter block at the top
of a Markdown file is metadata and is left out.

Plain text has no structure to split on: a file is one page titled by its name, or, when longer
than a page may be, consecutive paragraphs grouped into parts of at most `MAX_PAGE_CHARS`.

Nothing here checks sizes or content; the ingest gate (`resident.knowledge.gate`) does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from resident.messages.knowledge import PageKind

__all__ = ["MARKDOWN_SUFFIXES", "MAX_PAGE_CHARS", "TEXT_SUFFIXES", "Draft", "kind_of", "split_document"]

MAX_PAGE_CHARS = 16_000
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd"})
TEXT_SUFFIXES = frozenset({".txt", ".text"})

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BLANK_RUN = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True, slots=True)
class Draft:
    """A page as the parser found it, before the gate: its kind, title, text and place in the file."""

    kind: PageKind
    title: str
    body: str
    ordinal: int


def kind_of(suffix: str) -> PageKind | None:
    """The page kind a file name's suffix (`.md`, `.txt`, ...) stands for; None if not ingestible."""
    lowered = suffix.lower()
    if lowered in MARKDOWN_SUFFIXES:
        return "markdown"
    if lowered in TEXT_SUFFIXES:
        return "text"
    return None


def split_document(text: str, kind: PageKind, name: str) -> list[Draft]:
    """The pages of one document; `name` (the file's name without suffix) titles untitled text."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if kind == "markdown":
        return _markdown_pages(text, name)
    return _text_pages(text, name)


def _markdown_pages(text: str, name: str) -> list[Draft]:
    lines = _without_front_matter(text.split("\n"))
    sections: list[tuple[str, list[str]]] = [(name, [])]
    fence: str | None = None
    for line in lines:
        if fence is not None:
            sections[-1][1].append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening is not None:
            fence = opening.group(1)
            sections[-1][1].append(line)
            continue
        heading = _ATX.match(line)
        if heading is not None:
            sections.append(((heading.group(2) or "").strip(), []))
            continue
        body = sections[-1][1]
        if _SETEXT.match(line) and body and body[-1].strip() and (len(body) == 1 or not body[-2].strip()):
            # The underline turns the paragraph line above it into a heading of its own section.
            title = body.pop().strip()
            sections.append((title, []))
            continue
        body.append(line)
    drafts: list[Draft] = []
    for title, body_lines in sections:
        text = "\n".join(body_lines).strip("\n")
        if text.strip():
            drafts.append(Draft(kind="markdown", title=title, body=text, ordinal=len(drafts)))
    return drafts


def _without_front_matter(lines: list[str]) -> list[str]:
    if not lines or lines[0].strip() != "---":
        return lines
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            return lines[end + 1 :]
    return lines


def _text_pages(text: str, name: str) -> list[Draft]:
    body = text.strip("\n")
    if len(body) <= MAX_PAGE_CHARS:
        return [Draft(kind="text", title=name, body=body, ordinal=0)] if body.strip() else []
    parts: list[str] = []
    current = ""
    for paragraph in _BLANK_RUN.split(body):
        if current and len(current) + 2 + len(paragraph) > MAX_PAGE_CHARS:
            parts.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        parts.append(current)
    return [
        Draft(kind="text", title=f"{name} (part {index + 1})", body=part, ordinal=index)
        for index, part in enumerate(parts)
        if part.strip()
    ]
