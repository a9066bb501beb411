"""Claude Code transcripts: `projects/<munged cwd>/<session uuid>.jsonl` under `$CLAUDE_CONFIG_DIR`.

Each line is a JSON object tagged by `type`. `user` and `assistant` lines wrap an Anthropic
Messages `message` (content a string or blocks: `text`, `thinking`, `tool_use`, `tool_result`,
`image`) in an envelope with `uuid`, `parentUuid`, `sessionId`, `timestamp`, `cwd`; they form a
tree by `parentUuid` (a rewound prompt branches from an earlier entry). After a compaction the new
chain starts with no parent but names the old one in `logicalParentUuid`, which is followed so the
conversation stays one path; the compacted history arrives as a user line marked
`isCompactSummary`. A user line marked `isMeta` is context Claude Code injected, never typed (the
local-command caveat, slash-command wrappers and their output, reminders): counted as injected, not a
turn. Side chains (`isSidechain`, a subagent's turns) hang off their own roots. A
`summary` line titles the session for `--resume`; `system` lines carry notices and slash-command
output. The format is Claude Code's own and changes between releases, so lines of an unknown
type are kept raw rather than dropped.
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

__all__ = ["BOOKKEEPING", "entry_of", "meta_of", "parse"]

# Line types that hold no turn of the conversation (titles are read from some of them). An `attachment` is what
# Claude Code attaches to a prompt for the model (agent, skill and tool listings, several KB each) and
# `tools-used` lists tools; both are counted as listings. 2.1.x also records each API request it made
# (`api-request`, its `-blob` and `-shape`), an `atis-latch` and its `cost-state`: never what was said.
LISTINGS = frozenset({"attachment", "tools-used"})
BOOKKEEPING = frozenset({
    "file-history-snapshot", "file-history-delta", "queue-operation", "custom-title", "agent-name", "ai-title",
    "mode", "last-prompt", "pr-link", "atis-latch", "api-request", "api-request-blob", "api-request-shape",
    "cost-state",
}) | LISTINGS
_KNOWN = frozenset({"user", "assistant", "summary", "system"}) | BOOKKEEPING


def _user(line: dict[str, Any], message: Any, at: float | None) -> list[Draft]:
    content = message.get("content") if isinstance(message, dict) else None
    if line.get("isCompactSummary") is True:
        return [Draft("summary", "summary", text_of(content), at=at)]
    role: TurnRole = "user"
    if isinstance(content, str):
        return [Draft(role, "text", content, at=at)]
    drafts: list[Draft] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            text = text_of(block.get("content"))
            if block.get("is_error") is True:
                text = f"[error] {text}"
            drafts.append(Draft("tool", "tool_result", text, call=string(block.get("tool_use_id")), at=at))
        else:
            text = text_of([block])
            if text:
                drafts.append(Draft(role, "text", text, at=at))
    return drafts


def _assistant(message: Any, at: float | None) -> list[Draft]:
    content = message.get("content") if isinstance(message, dict) else None
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
            case "tool_use" | "server_tool_use":
                drafts.append(
                    Draft(
                        "assistant", "tool_call", compact(block.get("input", {})), tool=string(block.get("name")),
                        call=string(block.get("id")), at=at,
                    )
                )
            case "web_search_tool_result":
                drafts.append(
                    Draft("tool", "tool_result", compact(block.get("content", "")),
                          call=string(block.get("tool_use_id")), at=at)
                )
            case "redacted_thinking":
                continue
            case _:
                drafts.append(raw_draft(block, at))
    return drafts


def entry_of(line: dict[str, Any]) -> Entry:
    """The entry one Claude Code line makes (also used for Claude-format lines of the `command` harness)."""
    at = epoch(line.get("timestamp"))
    node = string(line.get("uuid"))
    parent = string(line.get("parentUuid")) or string(line.get("logicalParentUuid"))
    kind = line.get("type")
    message = line.get("message")
    match kind:
        case "user" if line.get("isMeta") is True:
            # Context Claude Code injected (the local-command caveat, command wrappers, reminders): the entry
            # keeps its place in the tree, its text stays in the raw transcript, and it is counted, not a turn.
            return Entry(node, parent)
        case "user":
            return Entry(node, parent, _user(line, message, at), conversational=True)
        case "assistant":
            return Entry(node, parent, _assistant(message, at), conversational=True)
        case "summary":
            return Entry(drafts=[Draft("summary", "summary", string(line.get("summary")), at=at)])
        case "system":
            text = string(line.get("content")) or compact({k: v for k, v in line.items() if k == "subtype"})
            return Entry(node, parent, [Draft("system", "text", text, at=at)])
        case str() if kind in BOOKKEEPING:
            return Entry(node, parent)
        case _:
            return Entry(node, parent, [raw_draft(line, at)])


def _read_meta(meta: Meta, line: dict[str, Any], titles: dict[str, str]) -> None:
    meta.external_id = meta.external_id or clean_id(line.get("sessionId"))
    meta.cwd = meta.cwd or string(line.get("cwd"))
    meta.version = meta.version or string(line.get("version"))
    kind = line.get("type")
    message = line.get("message")
    if kind == "assistant" and isinstance(message, dict):
        meta.model = meta.model or string(message.get("model"))
    if kind == "user" and line.get("isMeta") is True:
        meta.injected += 1
    if kind in LISTINGS:
        meta.listings += 1
    if kind in BOOKKEEPING:
        meta.bookkeeping += 1
    elif kind not in _KNOWN:
        meta.count_unknown(kind)
    at = epoch(line.get("timestamp"))
    if at is not None and (meta.started_at is None or at < meta.started_at):
        meta.started_at = at
    for kind, key in (("custom-title", "customTitle"), ("agent-name", "agentName"), ("summary", "summary"),
                      ("ai-title", "aiTitle")):
        if line.get("type") == kind and kind not in titles:
            titles[kind] = string(line.get(key)) or string(line.get("title"))


def meta_of(lines: list[dict[str, Any]]) -> Meta:
    """What Claude Code lines say about their session: id, cwd, start, and the title (a set one first)."""
    meta = Meta()
    titles: dict[str, str] = {}
    for line in lines:
        _read_meta(meta, line, titles)
    meta.title = next((titles[k] for k in ("custom-title", "agent-name", "summary", "ai-title") if titles.get(k)), "")
    return meta


def parse(lines: list[Line]) -> Parsed:
    """Entries and metadata of a Claude Code transcript (unknown or malformed lines kept raw)."""
    meta = meta_of([line.value for line in lines if isinstance(line.value, dict)])
    entries = [entry_of(line.value) if isinstance(line.value, dict) else not_a_mapping(line) for line in lines]
    return Parsed(meta, entries)
