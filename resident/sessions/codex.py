"""Codex rollouts: `sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl` under `$CODEX_HOME`.

Every line is `{"timestamp", "type", "payload"}`. `session_meta` heads the file (id, cwd, start,
`forked_from_id` for a fork); `response_item` lines are the protocol log — what the model saw and
said: `message` (role and `input_text` / `output_text` blocks), `reasoning` (readable summaries
beside encrypted content), `function_call` / `function_call_output` and `custom_tool_call` /
`custom_tool_call_output` paired by `call_id`, `local_shell_call`, `web_search_call`; `compacted`
replaces older history with a summary. `event_msg` lines mirror the same conversation for the
terminal UI and `turn_context` marks turn boundaries: both are bookkeeping here. A rollout has no
parent links (Codex forks into a new file), so file order is conversation order. Rollouts written
before the envelope existed hold the meta and the items bare; both shapes are read.
"""

from __future__ import annotations

from typing import Any

from resident.messages.sessions import TurnRole
from resident.sessions.entries import (
    Draft,
    Entry,
    Meta,
    Parsed,
    clean_id,
    compact,
    epoch,
    not_a_mapping,
    raw_draft,
    string,
    text_of,
)
from resident.sessions.lines import Line

__all__ = ["parse"]

_ITEMS = frozenset({
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
    "local_shell_call", "web_search_call",
})
# The terminal UI's mirror, turn boundaries, the model's view of the world and token counts: never turns.
_BOOKKEEPING = frozenset({"turn_context", "event_msg", "world_state", "token_usage_record"})
_ROLES: dict[str, TurnRole] = {"assistant": "assistant", "user": "user"}
# What Codex injects into the conversation itself, as user or developer messages: the projected AGENTS.md and
# the user's instructions, its environment block, its permissions and skills instructions. Context, not turns.
_INJECTED_PREFIXES = (
    "<INSTRUCTIONS>", "<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions",
    "<skills", "<user_shell_command>",
)


def _output(value: Any) -> str:
    """A tool output: a string, or (newer rollouts) an object holding it."""
    if isinstance(value, dict):
        return string(value.get("content")) or string(value.get("output")) or text_of(value.get("content"))
    return value if isinstance(value, str) else compact(value)


def _item(item: dict[str, Any], at: float | None) -> list[Draft]:
    call = string(item.get("call_id"))
    match item.get("type"):
        case "message":
            who = _ROLES.get(string(item.get("role")), "system")
            return [Draft(who, "text", text_of(item.get("content")), at=at)]
        case "reasoning":
            text = text_of(item.get("summary")) or text_of(item.get("content"))
            return [Draft("assistant", "thinking", text, at=at)] if text else []
        case "function_call":
            arguments = item.get("arguments")
            text = arguments if isinstance(arguments, str) else compact(arguments)
            return [Draft("assistant", "tool_call", text, tool=string(item.get("name")), call=call, at=at)]
        case "custom_tool_call":
            return [Draft("assistant", "tool_call", _output(item.get("input")), tool=string(item.get("name")),
                          call=call, at=at)]
        case "function_call_output" | "custom_tool_call_output":
            return [Draft("tool", "tool_result", _output(item.get("output")), call=call, at=at)]
        case "local_shell_call":
            action = item.get("action")
            command = action.get("command") if isinstance(action, dict) else None
            text = " ".join(string(part) for part in command) if isinstance(command, list) else compact(action)
            return [Draft("assistant", "tool_call", text, tool="shell", call=call, at=at)]
        case "web_search_call":
            return [Draft("assistant", "tool_call", compact(item.get("action", {})), tool="web_search", call=call,
                          at=at)]
        case _:
            return [raw_draft(item, at)]


def _session_meta(meta: Meta, payload: dict[str, Any]) -> None:
    meta.external_id = meta.external_id or clean_id(payload.get("id"))
    meta.cwd = meta.cwd or string(payload.get("cwd"))
    meta.started_at = meta.started_at if meta.started_at is not None else epoch(payload.get("timestamp"))
    meta.forked_from = meta.forked_from or clean_id(payload.get("forked_from_id"))
    meta.version = meta.version or string(payload.get("cli_version"))
    meta.model = meta.model or string(payload.get("model"))


def _injected(item: dict[str, Any]) -> bool:
    """Whether a message is context Codex injected: a developer or system message (its instructions), or a user
    message that is one of its wrappers (the projected AGENTS.md, the environment block)."""
    if item.get("type") != "message":
        return False
    role = string(item.get("role"))
    if role in ("developer", "system"):
        return True
    return role == "user" and text_of(item.get("content")).lstrip().startswith(_INJECTED_PREFIXES)


def _response_item(meta: Meta, item: dict[str, Any], at: float | None) -> Entry:
    if _injected(item):
        meta.injected += 1
        return Entry()
    if item.get("type") not in _ITEMS:
        # Kept raw below, and counted by kind, so a new item type shows in the session's summary.
        meta.count_unknown(f"response_item:{string(item.get('type')) or '(none)'}")
    return Entry(drafts=_item(item, at), conversational=True)


def _entry(meta: Meta, line: dict[str, Any]) -> Entry:
    at = epoch(line.get("timestamp"))
    kind = line.get("type")
    payload = line.get("payload")
    if kind == "session_meta" and isinstance(payload, dict):
        _session_meta(meta, payload)
        return Entry()
    if kind == "response_item" and isinstance(payload, dict):
        return _response_item(meta, payload, at)
    if kind == "compacted" and isinstance(payload, dict):
        return Entry(drafts=[Draft("summary", "summary", string(payload.get("message")), at=at)])
    if kind in _BOOKKEEPING:
        meta.bookkeeping += 1
        if kind == "turn_context" and isinstance(payload, dict):
            meta.model = meta.model or string(payload.get("model"))
        return Entry()
    if kind in _ITEMS:
        return _response_item(meta, line, at)  # an item written bare, before the envelope
    if kind is None and "id" in line and "timestamp" in line:
        _session_meta(meta, line)  # the bare meta line of an early rollout
        return Entry()
    meta.count_unknown(kind if kind is not None else line.get("record_type"))
    return Entry(drafts=[raw_draft(line, at)])


def parse(lines: list[Line]) -> Parsed:
    """Entries and metadata of a Codex rollout (unknown or malformed lines kept raw)."""
    meta = Meta()
    entries = [_entry(meta, line.value) if isinstance(line.value, dict) else not_a_mapping(line) for line in lines]
    return Parsed(meta, entries)
