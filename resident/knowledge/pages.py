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

# A line can only open a heading, an underline or a fence if it starts with one of these (after up
# to three spaces); the regular expressions run only on such lines, a tenth of a typical document's.
_MARKERS = frozenset("#=-`~")
_ATX = re.compile(r" {0,3}#{1,6}(?=[ \t]|$)")
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
    body = sections[-1][1]
    fence: str | None = None
    for line in lines:
        marker = line.lstrip(" ")[:1]
        if marker not in _MARKERS:
            body.append(line)
            continue
        if fence is not None:
            body.append(line)
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        if marker in "`~":
            opening = _FENCE.match(line)
            fence = opening.group(1) if opening is not None else None
            body.append(line)
            continue
        title = _atx_title(line) if marker == "#" else None
        if title is not None:
            sections.append((title, []))
            body = sections[-1][1]
            continue
        if marker in "=-" and _SETEXT.match(line) and body and body[-1].strip() and (
            len(body) == 1 or not body[-2].strip()
        ):
            # The underline turns the paragraph line above it into a heading of its own section.
            sections.append((body.pop().strip(), []))
            body = sections[-1][1]
            continue
        body.append(line)
    drafts: list[Draft] = []
    for title, body_lines in sections:
        content = "\n".join(body_lines).strip("\n")
        if content.strip():
            drafts.append(Draft(kind="markdown", title=title, body=content, ordinal=len(drafts)))
    whole = "\n".join(lines).strip("\n")
    if not drafts and whole.strip():
        # A document of headings only would otherwise vanish from the bank: it is one page of its own text.
        drafts.append(Draft(kind="markdown", title=name, body=whole, ordinal=0))
    return drafts


def _atx_title(line: str) -> str | None:
    """The title of an ATX heading line (`## Title ##`), or None if the line is not one."""
    opening = _ATX.match(line)
    if opening is None:
        return None
    rest = line[opening.end() :].strip()
    # A closing sequence of `#`s is dropped when a space separates it from the title (or it is all).
    unclosed = rest.rstrip("#")
    if not unclosed or unclosed[-1] in " \t":
        rest = unclosed.rstrip()
    return rest


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
