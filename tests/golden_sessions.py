"""Golden samples of the sessions' stored formats (records, turns, parts, events).

Every field is set to a value other than its default, so a renamed or re-ordered field changes the
golden bytes. Used by `tests/test_messages_golden.py`.
"""

from __future__ import annotations

from typing import Any

from resident.messages.base import Event
from resident.messages.sessions import (
    RecoveredTranscript,
    SessionImported,
    SessionRecord,
    SessionRecovered,
    SessionSource,
    SessionStarted,
    SessionTurn,
    TranscriptPart,
)

__all__ = ["session_samples"]


def session_samples(at: float) -> tuple[list[Event], list[Any]]:
    """The session events and stored records, each built once with every field set."""
    turn = SessionTurn(
        index=7, part=1, role="assistant", kind="tool_call", text='{"command":"pytest -x"} / 运行测试', tool="Bash",
        call="toolu_01Bash", node="a2000000-0000-4000-8000-000000000002", parent="t1000000-0000-4000-8000-000000000001",
        branch=True, at=at + 9.5, truncated=True,
    )
    part = TranscriptPart(
        index=1, source="/home/alice/.claude/projects/-home-alice-src/6f1c2d7e.jsonl", external_id="6f1c2d7e",
        title="payments: flaky retry test", cwd="/home/alice/src/payments", started_at=at, forked_from="0199f0aa",
        offset=4096, size=81920, stored=12288, digest="cd" * 32, lines=212, turns=180, unparsed=2, truncated=True,
        model="claude-sonnet-4-5", harness_version="2.1.3", listings=3, bookkeeping=9, injected=2,
        unknown_kinds=(("telemetry-blob", 1),),
    )
    session = SessionRecord(
        id="ses_01hzx3k9q0", member="deven", harness="claude-code", origin="started", state="recovered",
        started_at=at, bank="agent_core/deven", execution="exec_01hzx3k9q0", task="fix the flaky retry test",
        directory="/home/alice/src/payments", command=("claude", "--model", "opus"), ended_at=at + 600.0,
        exit_code=130, outcome="cancelled", note="interrupted", parts=(part,), turns=180,
        redactions=(("github-token", 2), ("injected", 1)), scope="AGENT_CORE_X", kind="experience_x",
    )
    transcript = RecoveredTranscript(parts=(part,), turns=(turn,), raw=(b"x\x9c\x03\x00",),
                                     redactions=(("jwt", 1),))
    events: list[Event] = [
        SessionStarted(at=at, session=session),
        SessionRecovered(at=at, id="ses_01hzx3k9q0", ended_at=at + 600.0, transcript=transcript, exit_code=1,
                         outcome="failed", note="the harness exited 1"),
        SessionImported(at=at, session=session, transcript=transcript),
    ]
    records: list[Any] = [session, turn, SessionSource(session="ses_01hzx3k9q0", part=1)]
    return events, records
