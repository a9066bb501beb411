"""The substrate's view of its embedder on its own: backoff after failures, lateness, and how long a query may wait."""

from __future__ import annotations

import pytest

from resident.actors.substrate_embedder import (
    BACKFILL_BATCH,
    EMBEDDER_BACKOFF,
    FILL_DEADLINE,
    QUERY_WAIT,
    WORKER_CHUNK,
    EmbedderState,
)
from resident.memory.embedding import HashEmbedder


def test_failures_in_a_row_wait_by_the_embedder_backoff_and_a_success_starts_again() -> None:
    embedder = EmbedderState(spec="local", name="local")
    waits = [embedder.failed("connection refused") for _ in range(7)]
    assert waits == [EMBEDDER_BACKOFF.delay(n, 0.0) for n in range(1, 8)]
    assert waits[:3] == [1.0, 2.0, 4.0]
    assert waits[-1] == EMBEDDER_BACKOFF.max
    assert (embedder.down, embedder.error) == (True, "connection refused")
    assert embedder.retry_wait() == EMBEDDER_BACKOFF.max  # asks without counting a failure
    embedder.succeeded(1, 0.01, fill=False)
    assert (embedder.down, embedder.error) == (False, "")
    assert embedder.failed("again") == EMBEDDER_BACKOFF.min


def test_the_worker_is_late_once_a_request_is_out_for_the_query_wait() -> None:
    embedder = EmbedderState(spec="local", name="local")
    embedder.sent(1, 100.0)
    assert not embedder.late(100.0 + QUERY_WAIT * 0.99)
    assert embedder.late(100.0 + QUERY_WAIT)
    embedder.answered(1)
    assert not embedder.late(100.0 + QUERY_WAIT)


def test_a_request_lost_with_a_dead_worker_stops_counting_after_the_fill_deadline() -> None:
    embedder = EmbedderState(spec="local", name="local")
    embedder.sent(1, 100.0)
    assert embedder.late(100.0 + FILL_DEADLINE)
    assert embedder.late_since(100.0 + FILL_DEADLINE + 0.01) is None
    assert embedder.outstanding == {}


def test_a_query_behind_an_earlier_request_waits_only_what_that_request_has_left() -> None:
    embedder = EmbedderState(spec="local", name="local")
    assert embedder.query_wait(50.0) == QUERY_WAIT
    embedder.sent(1, 50.0)
    assert embedder.query_wait(50.0 + QUERY_WAIT * 0.75) == pytest.approx(QUERY_WAIT * 0.25)
    assert embedder.query_wait(50.0 + QUERY_WAIT * 2) == 0.0


def test_chunks_follow_the_worker_speed_within_bounds_and_an_inline_embedder_fills_a_batch() -> None:
    embedder = EmbedderState(spec="local", name="local")
    for _ in range(30):
        embedder.succeeded(10, 10.0, fill=True)  # a second a text
    assert embedder.chunk() == 1
    for _ in range(60):
        embedder.succeeded(1000, 0.001, fill=True)
    assert embedder.chunk() == WORKER_CHUNK
    assert EmbedderState(inline=HashEmbedder()).chunk() == BACKFILL_BATCH
