"""pi sessions: `<sessions dir>/--<cwd>--/<time>_<uuid>.jsonl` (pi's coding agent, `badlogic/pi-mono`).

The first line is the `session` header (id, version, cwd, start, `parentSession` for a fork);
every later entry carries `id`, `parentId` and a `timestamp` and so forms a tree: branching
(`/tree`) continues from an earlier entry in the same file, with a `branch_summary` of the
branch left behind. `message` entries hold an agent message whose `role` says what it is: `user`,
`assistant` (content blocks `text`, `thinking`, `toolCall`), `toolResult` (paired by
`toolCallId`), `bashExecution` (a command the user ran), `custom`, and the summaries
`branchSummary` / `compactionSummary`. `compaction` and `branch_summary` entries are summaries too.
`custom_message` entries and `custom` messages are context an extension injected: counted as injected,
never turns (pi keeps its own system prompt and context files, the projected AGENTS.md among them, out of
the file; 0.73 writes none of it). Unknown entry types and message roles are kept raw and counted by kind.
`model_change`, `thinking_level_change`, `label` and `custom` are bookkeeping, counted;
`session_info` names the session. Version 1 files have no
ids, so file order stands.
"""

from __future__ import annotations

from typing import Any

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

# The message roles `_message` reads (`custom` is injected context, counted before it gets there).
_ROLES = frozenset({"user", "assistant", "toolResult", "bashExecution", "branchSummary", "compactionSummary"})
_BOOKKEEPING = frozenset({"model_change", "thinking_level_change", "label", "custom", "session_info"})


def _assistant(content: Any, at: float | None) -> list[Draft]:
    if isinstance(content, str):
        return [Draft("assistant", "text", content, at=at)]
    drafts: list[Draft] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        match block.get("type"):
            case "text":
                drafts.append(Draft("assistant", "text", string(block.get("text")), at=at))
            case "thinking":
                drafts.append(Draft("assistant", "thinking", string(block.get("thinking")), at=at))
            case "toolCall":
                drafts.append(Draft("assistant", "tool_call", compact(block.get("arguments", {})),
                                    tool=string(block.get("name")), call=string(block.get("id")), at=at))
            case _:
                drafts.append(raw_draft(block, at))
    return drafts


def _message(message: Any, at: float | None) -> list[Draft]:
    if not isinstance(message, dict):
        return [raw_draft(message, at)]
    content = message.get("content")
    match message.get("role"):
        case "user":
            return [Draft("user", "text", text_of(content), at=at)]
        case "assistant":
            return _assistant(content, at)
        case "toolResult":
            text = text_of(content)
            if message.get("isError") is True:
                text = f"[error] {text}"
            return [Draft("tool", "tool_result", text, tool=string(message.get("toolName")),
                          call=string(message.get("toolCallId")), at=at)]
        case "bashExecution":
            text = f"$ {string(message.get('command'))}\n{string(message.get('output'))}"
            return [Draft("tool", "tool_result", text, tool="bash", at=at)]
        case "branchSummary" | "compactionSummary":
            return [Draft("summary", "summary", string(message.get("summary")), at=at)]
        case _:
            return [raw_draft(message, at)]


def _injected(message: Any) -> bool:
    """Whether a message entry is context pi or an extension injected (a `custom` message), not a turn."""
    return isinstance(message, dict) and message.get("role") == "custom"


def _entry(meta: Meta, line: dict[str, Any]) -> Entry:
    at = epoch(line.get("timestamp"))
    node, parent = string(line.get("id")), string(line.get("parentId"))
    match line.get("type"):
        case "session":
            meta.external_id = meta.external_id or clean_id(line.get("id"))
            meta.cwd = meta.cwd or string(line.get("cwd"))
            meta.started_at = meta.started_at if meta.started_at is not None else at
            meta.forked_from = meta.forked_from or string(line.get("parentSession"))[:500]
            return Entry()
        case "message" if _injected(line.get("message")):
            meta.injected += 1
            return Entry(node, parent)
        case "message":
            message = line.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                meta.model = meta.model or string(message.get("model"))
            if not isinstance(message, dict) or message.get("role") not in _ROLES:
                # Kept raw, and counted by kind, so a new message role shows in the session's summary.
                role = message.get("role") if isinstance(message, dict) else None
                meta.count_unknown(f"message:{string(role) or '(none)'}")
            return Entry(node, parent, _message(message, at), conversational=True)
        case "compaction" | "branch_summary":
            return Entry(node, parent, [Draft("summary", "summary", string(line.get("summary")), at=at)])
        case "custom_message":
            meta.injected += 1
            return Entry(node, parent)
        case "session_info":
            meta.title = string(line.get("name")) or meta.title
            return Entry(node, parent)
        case str() as kind if kind in _BOOKKEEPING:
            meta.bookkeeping += 1
            return Entry(node, parent)
        case kind:
            meta.count_unknown(kind)
            return Entry(node, parent, [raw_draft(line, at)])


def parse(lines: list[Line]) -> Parsed:
    """Entries and metadata of a pi session file (unknown or malformed lines kept raw)."""
    meta = Meta()
    entries = [_entry(meta, line.value) if isinstance(line.value, dict) else not_a_mapping(line) for line in lines]
    return Parsed(meta, entries)
