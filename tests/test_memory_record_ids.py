"""Record ids kept as arrays: rows and ids found both ways, across a persist and longer ids added after it."""

from __future__ import annotations

import pytest

from resident.errors import InvalidInput
from resident.memory.record_ids import RecordIds

pytestmark = pytest.mark.timeout(30)


def test_ids_persisted_then_grown_then_persisted_again_find_every_row() -> None:
    first = [f"mem_{n:03d}" for n in (5, 1, 9, 3)]
    ids = RecordIds.of(first)
    loaded = RecordIds.from_state(ids.state())
    # Longer and shorter ids than the persisted ones, sorting between them.
    later = ["mem_0040", "a", "mem_002", "zz_very_long_identifier_beyond_the_first_width"]
    loaded.extend(later)
    again = RecordIds.from_state(loaded.state())
    for grown in (loaded, again):
        assert len(grown) == 8
        for row, record_id in enumerate(first + later):
            assert grown[row] == record_id
            assert grown.row(record_id) == row
        assert grown.row("mem_004") is None
        assert "mem_000" not in grown
        assert grown.isdisjoint(["nope", "mem_0041"])
        assert not grown.isdisjoint(["nope", "a"])


def test_arrays_that_do_not_fit_together_are_refused() -> None:
    state = RecordIds.of(["a", "b"]).state()
    state["ids_order"] = state["ids_order"][:1]
    with pytest.raises(InvalidInput):
        RecordIds.from_state(state)
