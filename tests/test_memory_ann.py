"""The vector graph alone (`resident.memory.ann.Ann`): it returns more candidates than asked for the
caller to score exactly, never a row its filter hides, in either quantizer, and refuses a setting it
does not know."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from resident.errors import InvalidInput
from resident.memory import ann
from resident.memory.ann import Ann

pytestmark = pytest.mark.timeout(60)

DIM = 32
ROWS = 3000


def _unit_rows(count: int, seed: int) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    unit: npt.NDArray[np.float32] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def _graph(quantizer: str = ann.QUANTIZER) -> tuple[Ann, npt.NDArray[np.float32]]:
    base = _unit_rows(ROWS, seed=1)
    graph = Ann.trained(base[:1000], links=8, build_width=40, quantizer=quantizer)
    # in chunks, as the index's build thread adds them
    for low in range(0, ROWS, 1000):
        graph.add(np.arange(low, low + 1000, dtype=np.int64), base[low : low + 1000])
    return graph, base


def _bits(allowed: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint8]:
    return np.packbits(allowed, bitorder="little")


@pytest.mark.parametrize("quantizer", sorted(ann.QUANTIZERS))
def test_the_graph_returns_its_candidates_and_holds_the_nearest_row(quantizer: str) -> None:
    graph, base = _graph(quantizer)
    query = base[1234] + 0.01 * _unit_rows(1, seed=2)[0]
    query /= np.linalg.norm(query)
    found = graph.search(query, 5, _bits(np.ones(ROWS, dtype=np.bool_)), width=64, candidates=50)
    assert len(found) == 50
    assert len(np.unique(found)) == 50
    assert 1234 in found.tolist()
    assert len(graph.search(query, 80, _bits(np.ones(ROWS, dtype=np.bool_)), width=64, candidates=50)) == 80


def test_rows_the_filter_hides_are_never_candidates_even_when_few_are_allowed() -> None:
    graph, base = _graph()
    allowed = np.zeros(ROWS, dtype=np.bool_)
    allowed[::100] = True  # 30 rows visible, fewer than the candidates asked for
    found = graph.search(base[7], 10, _bits(allowed), width=64, candidates=200)
    assert len(found)
    assert bool(allowed[found].all())


def test_a_graph_read_back_from_its_state_answers_the_same() -> None:
    graph, base = _graph("fp16")
    bits = _bits(np.ones(ROWS, dtype=np.bool_))
    again = Ann.from_state(graph.state())
    assert len(again) == ROWS
    assert again.search(base[42], 10, bits).tolist() == graph.search(base[42], 10, bits).tolist()


def test_an_unknown_quantizer_or_a_graph_without_links_is_refused() -> None:
    sample = _unit_rows(100, seed=3)
    with pytest.raises(InvalidInput, match="quantizer"):
        Ann.trained(sample, quantizer="4bit")
    with pytest.raises(InvalidInput, match="links"):
        Ann.trained(sample, links=1)
