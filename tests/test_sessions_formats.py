"""Transcript formats: each harness's fixture parses into ordered, paired, bounded turns, and
malformed or unknown input is kept, never fatal."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resident.messages.sessions import HARNESSES, Harness, SessionTurn
from resident.sessions import lines as lines_module
from resident.sessions import order
from resident.sessions.entries import Draft, Entry
from resident.sessions.redaction import Redactor
from resident.sessions.transcript import MAX_TURNS, TranscriptFile, recover, unpack
from tests.session_fixtures import load, planted_secrets

KEY = b"test-key"


def recovered(harness: Harness, data: bytes | None = None, source: str = "fixture.jsonl") -> list[SessionTurn]:
    content = data if data is not None else load(harness, planted_secrets())
    return list(recover(harness, [TranscriptFile(source, content)], Redactor(KEY)).turns)


def texts(turns: list[SessionTurn], **where: Any) -> list[str]:
    return [t.text for t in turns if all(getattr(t, k) == v for k, v in where.items())]


# -- Claude Code ---------------------------------------------------------------------------------


def test_claude_code_follows_parent_links_through_a_compaction_and_marks_the_abandoned_branch():
    turns = recovered("claude-code")
    said = [t.text for t in turns if t.role in ("user", "assistant") and t.kind == "text"]
    assert said[0].startswith("The payments retry test is flaky")
    assert said[-1].startswith("Committed 3f2a9c8")
    branch = [t for t in turns if t.branch]
    assert [t.text[:20] for t in branch] == ["Also switch the refu", "Pushing to main is t"]
    # The abandoned branch sits at its fork (after the compaction summary), before the final path goes on.
    indices = {t.text[:20]: t.index for t in turns}
    assert indices["This session is bein"] < indices["Also switch the refu"] < indices["Commit the fix with "]
    assert [t.index for t in turns] == list(range(len(turns)))


def test_claude_code_tool_calls_and_results_are_paired_by_their_call_id():
    turns = recovered("claude-code")
    calls = {t.call: t for t in turns if t.kind == "tool_call"}
    results = {t.call: t for t in turns if t.kind == "tool_result"}
    assert set(calls) == set(results) == {"toolu_01Read", "toolu_01Bash", "toolu_01Edit", "toolu_01Env"}
    assert calls["toolu_01Bash"].tool == "Bash"
    assert json.loads(calls["toolu_01Read"].text)["file_path"].endswith("tests/test_retry.py")
    assert results["toolu_01Bash"].text.startswith("[error] ")
    assert all(calls[c].index < results[c].index for c in calls)


def test_claude_code_keeps_summaries_thinking_an_unknown_line_and_a_line_cut_short():
    turns = recovered("claude-code")
    assert len(texts(turns, kind="summary")) == 2  # the title line and the compacted history
    assert texts(turns, kind="thinking")[0].startswith("The assertion races the wall clock")
    (raw,) = texts(turns, kind="raw")
    assert "agent-telemetry-v9" in raw
    (cut,) = texts(turns, kind="unparsed")
    assert cut.endswith('"content":"and then')


def test_claude_code_metadata_prefers_the_title_the_user_set():
    transcript = recover("claude-code", [TranscriptFile("x.jsonl", load("claude-code", planted_secrets()))],
                         Redactor(KEY))
    (part,) = transcript.parts
    assert part.external_id == "6f1c2d7e-8a9b-4c3d-9e0f-1a2b3c4d5e6f"
    assert part.title == "payments: flaky retry test"
    assert part.cwd == "/home/alice/src/payments"
    assert part.unparsed == 1
    assert part.started_at == pytest.approx(1772442000.0)


# -- Codex ---------------------------------------------------------------------------------------


def test_codex_reads_messages_reasoning_tool_calls_outputs_and_the_compacted_summary():
    turns = recovered("codex")
    assert texts(turns, role="user")[-1].startswith("Document the flag")
    assert texts(turns, kind="thinking") == ["**Reading the deploy script** before changing its argument parsing."]
    tools = [(t.kind, t.tool, t.call) for t in turns if t.kind in ("tool_call", "tool_result")]
    assert tools[:6] == [
        ("tool_call", "exec_command", "call_8Qx1"), ("tool_result", "", "call_8Qx1"),
        ("tool_call", "apply_patch", "call_9Ap2"), ("tool_result", "", "call_9Ap2"),
        ("tool_call", "shell", "call_7Ls3"), ("tool_result", "", "call_7Ls3"),
    ]
    assert texts(turns, kind="summary")[0].startswith("Summary so far: deploy.sh gained --dry-run")
    # The display mirror (event_msg) and turn boundaries add no turns of their own, and neither does the context
    # Codex injects (its permissions instructions, the <environment_context> block): the user said two things.
    assert len(texts(turns, role="user")) == 2
    assert texts(turns, role="system") == []
    assert not any(t.branch for t in turns)


def test_codex_bookkeeping_and_injected_context_are_metadata_and_unknown_kinds_are_counted():
    lines = [
        {"timestamp": "2026-03-03T14:20:00Z", "type": "session_meta",
         "payload": {"id": "019a2d7a-0000-7000-8000-000000000001", "cli_version": "0.171.0"}},
        {"timestamp": "2026-03-03T14:20:01Z", "type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        {"timestamp": "2026-03-03T14:20:01Z", "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text",
                         "text": "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>You are deven"}]}},
        {"timestamp": "2026-03-03T14:20:02Z", "type": "world_state", "payload": {"files": 12}},
        {"timestamp": "2026-03-03T14:20:02Z", "type": "token_usage_record", "payload": {"input": 900}},
        {"timestamp": "2026-03-03T14:20:03Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]}},
        {"timestamp": "2026-03-03T14:20:04Z", "type": "hologram", "payload": {}},
    ]
    data = b"\n".join(json.dumps(line).encode() for line in lines)
    transcript = recover("codex", [TranscriptFile("x.jsonl", data)], Redactor(KEY))
    (part,) = transcript.parts
    assert [(t.role, t.text) for t in transcript.turns if t.role != "other"] == [("user", "run the tests")]
    assert (part.model, part.harness_version, part.injected, part.bookkeeping) == ("gpt-5-codex", "0.171.0", 1, 3)
    assert part.unknown_kinds == (("hologram", 1),)


def test_claude_code_attachments_and_queue_bookkeeping_are_metadata_not_turns():
    lines = [
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "6f1c2d7e-8a9b-4c3d-9e0f-1a2b3c4d5e6f"},
        {"type": "attachment", "uuid": "a1", "parentUuid": None, "version": "2.1.3",
         "attachment": {"type": "agent_listing", "content": "x" * 5000}},
        {"type": "user", "uuid": "u1", "parentUuid": "a1", "version": "2.1.3",
         "message": {"role": "user", "content": "fix the retry test"}},
        {"type": "assistant", "uuid": "m1", "parentUuid": "u1",
         "message": {"role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "done"}]}},
        {"type": "last-prompt", "lastPrompt": "fix the retry test"},
        {"type": "telemetry-blob", "uuid": "t1"},
    ]
    data = b"\n".join(json.dumps(line).encode() for line in lines)
    transcript = recover("claude-code", [TranscriptFile("x.jsonl", data)], Redactor(KEY))
    (part,) = transcript.parts
    assert [(t.role, t.text) for t in transcript.turns if t.role != "other"] == [
        ("user", "fix the retry test"), ("assistant", "done"),
    ]
    assert (part.model, part.harness_version, part.listings, part.bookkeeping) == ("claude-sonnet-4-5", "2.1.3", 1, 3)
    assert part.unknown_kinds == (("telemetry-blob", 1),)


def test_codex_records_the_session_it_was_forked_from():
    transcript = recover("codex", [TranscriptFile("x.jsonl", load("codex", planted_secrets()))], Redactor(KEY))
    (part,) = transcript.parts
    assert part.external_id == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
    assert part.forked_from == "0199f0aa-1111-7222-8333-444455556666"
    assert part.cwd == "/home/alice/src/deploy-tools"


def test_codex_reads_a_rollout_written_before_the_envelope_existed():
    early = b"\n".join(
        json.dumps(line).encode()
        for line in (
            {"id": "0194aaaa-bbbb-7ccc-8ddd-eeeeffff0000", "timestamp": "2025-04-01T10:00:00Z", "instructions": None},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"record_type": "state"},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
        )
    )
    transcript = recover("codex", [TranscriptFile("x.jsonl", early)], Redactor(KEY))
    assert transcript.parts[0].external_id == "0194aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    kinds = [(t.role, t.kind) for t in transcript.turns]
    assert kinds == [("user", "text"), ("other", "raw"), ("assistant", "tool_call")]


# -- pi ------------------------------------------------------------------------------------------


def test_pi_puts_the_abandoned_branch_at_its_fork_and_follows_the_branch_summary():
    turns = recovered("pi")
    assert turns[0].text.startswith("Why does the ledger total drift")
    branch = [t for t in turns if t.branch]
    assert [t.kind for t in branch] == ["thinking", "tool_call", "tool_result", "text", "tool_call", "tool_result"]
    after = turns[len(branch) + 1 :]
    assert after[0].kind == "summary"
    assert after[0].text.startswith("Tried rewriting every float")
    assert not any(t.branch for t in after)
    assert texts(turns, role="assistant", kind="text")[-1].startswith("Rule for this ledger")


def test_pi_reads_tool_results_a_users_shell_command_compaction_and_counts_extension_context():
    turns = recovered("pi")
    edit = next(t for t in turns if t.kind == "tool_result" and t.tool == "edit")
    assert edit.call == "toolu_01PiEdit"
    assert any(t.text.startswith("$ python -m pytest tests/test_import.py") for t in turns)
    assert any(t.text.startswith("The one-cent drift came from") for t in turns if t.kind == "summary")
    # An extension's injected context is counted as injected, never a turn.
    assert not any("branch: fix/ledger-drift" in t.text for t in turns)
    transcript = recover("pi", [TranscriptFile("x.jsonl", load("pi", planted_secrets()))], Redactor(KEY))
    assert transcript.parts[0].injected == 1
    assert transcript.parts[0].title == "ledger cent drift"
    assert transcript.parts[0].external_id == "a3b4c5d6-e7f8-4a0b-9c1d-2e3f4a5b6c7d"


# -- the command harness -------------------------------------------------------------------------


def test_a_command_transcript_reads_plain_lines_and_claude_code_lines_alike():
    turns = recovered("command")
    assert [(t.role, t.kind) for t in turns] == [
        ("user", "text"), ("assistant", "text"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "text"), ("summary", "summary"), ("other", "unparsed"),
    ]
    assert turns[2].tool == "write_file"
    assert turns[2].at == 1772700000.5
    assert turns[3].at == pytest.approx(1772701201.0)


# -- raw bytes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("harness", HARNESSES)
def test_the_raw_bytes_keep_every_line_and_only_redacted_lines_change(harness: Harness):
    data = load(harness, planted_secrets())
    transcript = recover(harness, [TranscriptFile("x.jsonl", data)], Redactor(KEY))
    (part,) = transcript.parts
    raw = unpack(transcript.raw[0], part)
    original, kept = data.split(b"\n"), raw.split(b"\n")
    assert len(original) == len(kept)
    assert part.lines == sum(1 for line in original if line.strip())
    changed = [i for i, (a, b) in enumerate(zip(original, kept, strict=True)) if a != b]
    assert changed, "the fixture plants secrets"
    assert all(b"[REDACTED:" in kept[i] for i in changed)


def test_a_stored_raw_transcript_that_was_altered_is_refused():
    transcript = recover("command", [TranscriptFile("x.jsonl", load("command", {}))], Redactor(KEY))
    part = transcript.parts[0]
    tampered = msgspec.structs.replace(part, digest="0" * 64)
    with pytest.raises(OSError, match="altered"):
        unpack(transcript.raw[0], tampered)
    with pytest.raises(OSError, match="does not decompress"):
        unpack(b"not zlib", part)


# -- hostile input -------------------------------------------------------------------------------


def test_parent_links_that_form_a_cycle_or_repeat_an_id_cannot_loop_or_lose_an_entry():
    entries = [
        Entry("a", "c", [Draft("user", "text", "a")], conversational=True),
        Entry("b", "a", [Draft("assistant", "text", "b")], conversational=True),
        Entry("c", "b", [Draft("user", "text", "c")], conversational=True),
        Entry("d", "d", [Draft("user", "text", "d")], conversational=True),
        Entry("d", "x", [Draft("user", "text", "d again")], conversational=True),
    ]
    out = [entry.drafts[0].text for entry, _ in order.threaded(entries)]
    assert sorted(out) == ["a", "b", "c", "d", "d again"]


def test_a_chain_of_a_hundred_thousand_entries_is_ordered_without_recursion():
    entries = [Entry(str(i), str(i - 1) if i else "", [Draft("user", "text", str(i))], True) for i in range(100_000)]
    entries.reverse()  # children before their parents in the file
    turns, cut = order.number_turns(entries, part=0, first=0, limit=MAX_TURNS)
    assert cut
    assert [t.text for t in turns[:3]] == ["0", "1", "2"]
    assert len(turns) == MAX_TURNS


def test_a_line_too_long_to_decode_is_kept_as_redacted_text(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lines_module, "MAX_LINE_BYTES", 64)
    token = planted_secrets()["GITHUB_TOKEN"]
    line = json.dumps({"role": "user", "text": "x" * 80 + " " + token}).encode()
    transcript = recover("command", [TranscriptFile("x.jsonl", line)], Redactor(KEY))
    (turn,) = transcript.turns
    assert turn.kind == "unparsed"
    assert token not in turn.text
    assert token.encode() not in unpack(transcript.raw[0], transcript.parts[0])


def test_invalid_utf8_is_kept_in_the_raw_bytes_and_shown_replaced():
    data = b'{"role":"user","text":"ok"}\n\xff\xfe broken \xc3\x28 line\n'
    transcript = recover("command", [TranscriptFile("x.jsonl", data)], Redactor(KEY))
    assert unpack(transcript.raw[0], transcript.parts[0]) == data
    assert transcript.turns[1].text == "\ufffd\ufffd broken \ufffd( line"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_LINE = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["user", "assistant", "summary", "system", "message", "session", "response_item",
                                 "compacted", "session_meta", "branch_summary", "x"]),
        "uuid": st.text(max_size=3), "parentUuid": st.text(max_size=3) | st.none(), "id": st.text(max_size=3),
        "parentId": st.text(max_size=3), "message": _JSON, "payload": _JSON, "content": _JSON, "role": _JSON,
        "text": _JSON, "timestamp": _JSON, "summary": _JSON,
    },
) | _JSON


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_LINE, max_size=12), harness=st.sampled_from(HARNESSES))
def test_any_json_lines_in_any_shape_parse_without_failing(lines: list[Any], harness: Harness):
    data = b"\n".join(json.dumps(line).encode() for line in lines)
    transcript = recover(harness, [TranscriptFile("x.jsonl", data)], Redactor(KEY))
    assert [t.index for t in transcript.turns] == list(range(len(transcript.turns)))
    assert unpack(transcript.raw[0], transcript.parts[0]).count(b"\n") == data.count(b"\n")
