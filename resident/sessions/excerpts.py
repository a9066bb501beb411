"""Curation: which pieces of a member's experience could become memories.

A recovered session is experience; memory is what the owner admits from it. The candidates are the
turns that state something whole: the summaries a harness wrote (of a compacted history, of an
abandoned branch, a session's title line), the last thing the member said in each transcript on
its final path (its conclusion), and the other things it said there at some length (findings).
Turns on abandoned branches, tool traffic and thinking are not offered: they are the work, not
what came of it. Candidates are offered best kind first, then the newest session first, then the
latest turn first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from resident.messages.limits import MAX_BODY_CHARS
from resident.messages.sessions import ExcerptKind, SessionExcerpt, SessionRecord, SessionTurn

__all__ = ["MIN_EXCERPT_CHARS", "excerpt_id", "excerpts_of", "parse_excerpt_id", "ranked"]

# Shorter assistant turns ("Done.", "Let me look.") say nothing worth remembering on their own.
MIN_EXCERPT_CHARS = 40
_RANK: dict[ExcerptKind, int] = {"summary": 0, "conclusion": 1, "finding": 2}


def excerpt_id(session: str, turn: int) -> str:
    return f"{session}#{turn}"


def parse_excerpt_id(value: str) -> tuple[str, int] | None:
    """(session, turn) from `ses_…#17`, or None when it is not shaped so."""
    session, mark, turn = value.partition("#")
    if not mark or not session or not turn.isdigit() or len(turn) > 9:
        return None
    return session, int(turn)


def _excerpt(session: SessionRecord, turn: SessionTurn, kind: ExcerptKind) -> SessionExcerpt:
    text = turn.text.strip()
    cut = len(text) > MAX_BODY_CHARS
    return SessionExcerpt(
        id=excerpt_id(session.id, turn.index), session=session.id, turn=turn.index, member=session.member,
        harness=session.harness, kind=kind, text=text[: MAX_BODY_CHARS - 1] + "…" if cut else text,
        at=turn.at if turn.at is not None else session.started_at, truncated=cut or turn.truncated,
    )


def excerpts_of(session: SessionRecord, turns: Sequence[SessionTurn]) -> list[SessionExcerpt]:
    """The curation candidates of one session, in turn order."""
    said = [
        t for t in turns
        if t.role == "assistant" and t.kind == "text" and not t.branch and len(t.text.strip()) >= MIN_EXCERPT_CHARS
    ]
    last_of_part = {t.part: t.index for t in said}
    found: list[SessionExcerpt] = []
    for turn in turns:
        if turn.kind == "summary" and turn.text.strip():
            found.append(_excerpt(session, turn, "summary"))
        elif turn in said:
            kind: ExcerptKind = "conclusion" if last_of_part[turn.part] == turn.index else "finding"
            found.append(_excerpt(session, turn, kind))
    return found


def ranked(excerpts: Iterable[SessionExcerpt], started: dict[str, float]) -> list[SessionExcerpt]:
    """Best kind first, then the newest session (by `started`), then the latest turn."""
    return sorted(excerpts, key=lambda e: (_RANK[e.kind], -started.get(e.session, 0.0), -e.turn))
