"""The knowledge-entry lifecycle: the store's projection allows exactly the moves `ENTRY_TRANSITIONS` lists."""

from __future__ import annotations

import pytest

from resident.errors import PromotionRefused, StateChanged
from resident.messages.base import Event
from resident.messages.knowledge import (
    ENTRY_STATES,
    ENTRY_TRANSITIONS,
    EntryStaled,
    EntryState,
    EntrySuperseded,
    EntryVerified,
    KnowledgeEntry,
)
from resident.store.projection_table import project
from resident.store.tables import KNOWLEDGE_ENTRIES
from resident.store.view import DictView

VERSION = 3


def _move_to(target: EntryState) -> Event:
    if target == "verified":
        return EntryVerified(at=10.0, id="e1", version=VERSION, evidence=())
    if target == "stale":
        return EntryStaled(at=10.0, id="e1", version=VERSION, reason="a dependency changed")
    return EntrySuperseded(at=10.0, id="e1", version=VERSION, by="e2")


def _view_with_entry(state: EntryState) -> DictView:
    view = DictView()
    view.put(KNOWLEDGE_ENTRIES, "e1", KnowledgeEntry(
        id="e1", project="p", repository="r", kind="fact", title="t", body="b", visibility="project",
        owner="member:alice", state=state, version=VERSION, created_at=1.0, changed_at=1.0,
    ))
    return view


@pytest.mark.parametrize("source", ENTRY_STATES)
@pytest.mark.parametrize("target", ["verified", "stale", "superseded"])
def test_the_projection_allows_exactly_the_lifecycle_tables_moves(source: EntryState, target: EntryState) -> None:
    view = _view_with_entry(source)
    if target not in ENTRY_TRANSITIONS[source]:
        with pytest.raises(StateChanged, match=f"is {source} now"):
            project(view, _move_to(target))
        return
    if target == "verified":
        # Past the lifecycle, promotion still wants its evidence; refusing for that proves the move was allowed.
        with pytest.raises(PromotionRefused, match="without evidence"):
            project(view, _move_to(target))
        return
    assert project(view, _move_to(target))
    entry = view.get(KNOWLEDGE_ENTRIES, "e1")
    assert entry is not None
    assert (entry.state, entry.version) == (target, VERSION + 1)
