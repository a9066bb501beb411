"""Putting a transcript's entries in conversation order by their parent links, and numbering its turns.

Claude Code and pi write a tree: each entry names its parent, and a rewound or edited turn starts
a new branch from an earlier entry in the same file. The *final path* runs from the last
conversational entry (the leaf the harness ended on) back to the root, with whatever was written
below that leaf (titles, labels); its entries are the conversation, every other entry with an id
is on a branch. Entries are emitted depth first from
each root (roots in file order): at a fork, the abandoned branches come first and the final path
continues after them, so the conversation reads straight through and each branch sits where it
left it. Entries without an id (bookkeeping, summaries, every line of a format without links) keep
their place in file order. A hostile file cannot loop this: a parent link that would close a cycle
is ignored, and every entry is emitted exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator

from resident.messages.sessions import SessionTurn
from resident.sessions.entries import Entry

__all__ = ["MAX_TURN_CHARS", "number_turns", "threaded"]

MAX_TURN_CHARS = 20_000


def _final_path(entries: list[Entry], known: dict[str, int], children: dict[int, list[int]]) -> set[int]:
    """The leaf's ancestors and the leaf, plus what hangs below the leaf (bookkeeping written after it)."""
    leaf = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].conversational and entries[i].node), None)
    if leaf is None:
        return set()
    path: set[int] = set()
    below = [leaf]
    while below:
        index = below.pop()
        if index not in path:
            path.add(index)
            below += children.get(index, [])
    ancestor = known.get(entries[leaf].parent)
    while ancestor is not None and ancestor not in path:
        path.add(ancestor)
        ancestor = known.get(entries[ancestor].parent)
    return path


def threaded(entries: list[Entry]) -> Iterator[tuple[Entry, bool]]:
    """Each entry once, in conversation order, with whether it lies on a branch."""
    known: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry.node and entry.node not in known:
            known[entry.node] = index
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    for index, entry in enumerate(entries):
        parent = known.get(entry.parent, -1) if entry.node and known.get(entry.node) == index else -1
        if parent < 0 or parent == index:
            roots.append(index)
        else:
            children.setdefault(parent, []).append(index)
    final = _final_path(entries, known, children)
    emitted: set[int] = set()
    for root in roots:
        stack = [root]
        while stack:
            index = stack.pop()
            if index in emitted:
                continue
            emitted.add(index)
            entry = entries[index]
            yield entry, bool(final) and bool(entry.node) and index not in final
            below = children.get(index, [])
            # Popped last-in first-out: the final path is pushed first so that it comes out last.
            stack += [i for i in below if i in final] + [i for i in reversed(below) if i not in final]
    # Entries whose links form a cycle are reachable from no root; they still appear, as a branch.
    for index, entry in enumerate(entries):
        if index not in emitted:
            yield entry, bool(entry.node)


def number_turns(entries: list[Entry], *, part: int, first: int, limit: int) -> tuple[list[SessionTurn], bool]:
    """The turns of one part in conversation order, numbered from `first`, at most `limit` of them.

    Also whether turns were left out for the limit (the raw transcript still holds them).
    """
    turns: list[SessionTurn] = []
    for entry, branch in threaded(entries):
        for draft in entry.drafts:
            if len(turns) >= limit:
                return turns, True
            text = draft.text
            cut = len(text) > MAX_TURN_CHARS
            turns.append(
                SessionTurn(
                    index=first + len(turns), part=part, role=draft.role, kind=draft.kind,
                    text=text[:MAX_TURN_CHARS] + "…" if cut else text, tool=draft.tool[:200], call=draft.call[:200],
                    node=entry.node[:200], parent=entry.parent[:200], branch=branch, at=draft.at, truncated=cut,
                )
            )
    return turns, False
