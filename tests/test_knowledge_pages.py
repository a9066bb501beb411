"""Splitting documents into pages, and the ingest gate's verdict on each page."""

from __future__ import annotations

from hypothesis import assume, example, given
from hypothesis import strategies as st

from resident.knowledge.gate import (
    MAX_TITLE_CHARS,
    Admit,
    Duplicate,
    Refuse,
    holds_control_characters,
    judge,
    page_digest,
)
from resident.knowledge.pages import MAX_PAGE_CHARS, Draft, kind_of, split_document


def titles(text: str, kind: str = "markdown") -> list[tuple[str, str]]:
    return [(d.title, d.body) for d in split_document(text, kind, "notes")]  # type: ignore[arg-type]


def test_markdown_is_split_at_every_heading_and_untitled_text_takes_the_file_name() -> None:
    text = "intro line\n\n# One\nbody one\n\n## Two ##\nbody two\n### Three\nbody three\n"
    assert titles(text) == [
        ("notes", "intro line"), ("One", "body one"), ("Two", "body two"), ("Three", "body three"),
    ]


def test_a_heading_without_text_makes_no_page() -> None:
    assert titles("# Guide\n\n## Install\nrun it\n") == [("Install", "run it")]


def test_headings_inside_fenced_code_are_code() -> None:
    text = "# Shell\n```sh\n# not a heading\necho hi\n```\nafter\n~~~\n## still code\n~~~\n"
    [(title, body)] = titles(text)
    assert title == "Shell"
    assert "# not a heading" in body
    assert "## still code" in body
    assert "after" in body


def test_setext_underlines_make_headings_and_front_matter_is_left_out() -> None:
    text = "---\ntitle: x\n---\nFirst\n=====\nalpha\n\nSecond\n------\nbeta\n"
    assert titles(text) == [("First", "alpha"), ("Second", "beta")]


def test_crlf_line_ends_split_like_lf() -> None:
    assert titles("# A\r\nbody\r\n# B\r\nmore\r\n") == [("A", "body"), ("B", "more")]


def test_plain_text_is_one_page_or_parts_at_paragraphs_when_too_long() -> None:
    assert titles("just text\n\nmore", "text") == [("notes", "just text\n\nmore")]
    paragraph = "x" * 9000
    parts = split_document(f"{paragraph}\n\n{paragraph}\n\n{paragraph}", "text", "big")
    assert [d.title for d in parts] == ["big (part 1)", "big (part 2)", "big (part 3)"]
    assert all(len(d.body) <= MAX_PAGE_CHARS for d in parts)


def test_only_markdown_and_plain_text_suffixes_are_ingestible() -> None:
    assert (kind_of(".md"), kind_of(".MARKDOWN"), kind_of(".txt"), kind_of(".py"), kind_of("")) == (
        "markdown", "markdown", "text", None, None,
    )


def draft(title: str = "Title", body: str = "body", kind: str = "markdown") -> Draft:
    return Draft(kind=kind, title=title, body=body, ordinal=0)  # type: ignore[arg-type]


def nothing_held(_digest: str) -> None:
    return None


def test_the_gate_admits_a_sound_page_with_its_digest() -> None:
    verdict = judge(draft("  Deploy   guide ", "run it"), nothing_held)
    assert verdict == Admit(title="Deploy guide", digest=page_digest("markdown", "Deploy guide", "run it"))


def test_the_gate_refuses_each_unsound_page_with_a_reason() -> None:
    cases = {
        "no title": draft(title="   "),
        "title too long": draft(title="t" * (MAX_TITLE_CHARS + 1)),
        "empty": draft(body=" \n "),
        "too large": draft(body="b" * (MAX_PAGE_CHARS + 1)),
        "terminal escape": draft(body="see \x1b[2J here"),
        "escape in title": draft(title="\x1b]0;pwned\x07"),
        "binary": draft(body="a\x00b"),
        "unknown kind": draft(kind="html"),
    }
    for name, case in cases.items():
        verdict = judge(case, nothing_held)
        assert isinstance(verdict, Refuse), name
        assert verdict.reason, name


def test_control_characters_are_exactly_c0_but_tab_newline_and_return_del_and_c1() -> None:
    controls = {*range(0x20), 0x7F, *range(0x80, 0xA0)} - {ord("\t"), ord("\n"), ord("\r")}
    for codepoint in (*range(0x300), 0xD800, 0xDFFF, 0xFEFF, 0x2028, 0xFFFF, 0x10FFFF):
        assert holds_control_characters(f"text {chr(codepoint)} text") == (codepoint in controls), hex(codepoint)


def test_a_text_the_bank_holds_is_a_duplicate_not_a_refusal() -> None:
    digest = page_digest("markdown", "Title", "body")
    verdict = judge(draft(), lambda d: "page p1" if d == digest else None)
    assert verdict == Duplicate(digest=digest, where="page p1")


def test_a_document_of_headings_only_is_one_page_of_its_own_text() -> None:
    assert titles("0\n=") == [("notes", "0\n=")]
    assert titles("# Guide\n## Install\n") == [("notes", "# Guide\n## Install")]


@given(st.lists(st.text(max_size=60), max_size=12))
@example(["0", "="])  # a setext heading with nothing under it was once the whole document, and vanished
def test_splitting_never_loses_a_line_of_text(lines: list[str]) -> None:
    text = "\n".join(lines)
    assume(not text.lstrip("\n").startswith("---"))  # front matter is left out on purpose
    pages = split_document(text, "markdown", "doc")
    if text.strip():
        assert pages, "a document with text makes at least one page"
    kept = "\n".join(f"{p.title}\n{p.body}" for p in pages)
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        content = line.strip().lstrip("#").strip().rstrip("#").strip()
        if content and not set(content) <= {"=", "-"}:
            assert content in kept or content.strip("-=") in kept
