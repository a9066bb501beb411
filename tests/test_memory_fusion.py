"""Ranking helpers: top-k, weighted score fusion, time windows in three languages, temporal ranking."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from resident.memory.fusion import (
    by_max,
    min_max,
    parse_time_window,
    recency_rank,
    temporal_rank,
    top_k,
    weighted_sum,
)

# Wednesday 2 December 2026, noon UTC.
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC).timestamp()


def _day(year: int, month: int, day: int) -> float:
    return datetime(year, month, day, tzinfo=UTC).timestamp()


scores = st.lists(st.floats(0, 1e6, allow_nan=False), max_size=30)


def test_weighted_sum_ranks_rows_by_each_channel_times_its_weight() -> None:
    rows, fused = weighted_sum([7, 3, 5], [([1.0, 0.0, 0.5], 1.0), ([0.0, 1.0, 1.0], 0.4)])
    assert rows.tolist() == [7, 5, 3]
    assert fused.tolist() == pytest.approx([1.0, 0.9, 0.4])


def test_weighted_sum_breaks_equal_sums_by_lower_row() -> None:
    rows, _ = weighted_sum([9, 4], [([0.5, 0.5], 1.0)])
    assert rows.tolist() == [4, 9]


def test_an_exact_keyword_match_outweighs_a_weak_channels_whole_range() -> None:
    # The hash embedder's cosine, min-max scaled, can add at most its weight: a row with the best
    # keyword score and the worst cosine still beats one with half of it and the best cosine.
    keyword, cosine = by_max([8.0, 4.0]), min_max([0.1, 0.9])
    rows, _ = weighted_sum([0, 1], [(keyword, 1.0), (cosine, 0.05)])
    assert rows.tolist() == [0, 1]


@given(scores)
def test_by_max_puts_the_best_at_one_and_never_reverses_an_order(values: list[float]) -> None:
    scaled = by_max(values)
    assert ((scaled >= 0) & (scaled <= 1)).all()
    if values and max(values) > 0:
        assert scaled.max() == 1.0
        for low, high in itertools.permutations(range(len(values)), 2):
            if values[low] <= values[high]:
                assert scaled[low] <= scaled[high]
    else:
        assert not scaled.any()


@given(st.lists(st.floats(-1, 1, allow_nan=False), max_size=30))
def test_min_max_maps_the_range_onto_zero_to_one(values: list[float]) -> None:
    scaled = min_max(values)
    assert ((scaled >= 0) & (scaled <= 1 + 1e-12)).all()
    if len(set(values)) > 1:
        assert scaled.min() == 0.0
        assert scaled.max() == pytest.approx(1.0)
    else:
        assert not scaled.any()


def test_recency_rank_gives_the_latest_one_and_equal_times_one_score() -> None:
    assert recency_rank([10.0, 30.0, 20.0, 30.0]).tolist() == pytest.approx([1 / 3, 1.0, 2 / 3, 1.0])
    assert len(recency_rank([])) == 0


@given(st.lists(st.integers(-5, 5), max_size=40), st.integers(0, 45))
def test_top_k_keeps_the_best_scores_and_breaks_ties_by_row(values: list[int], limit: int) -> None:
    rows, scores = top_k(np.arange(len(values)), np.array(values, dtype=np.float64), limit)
    expected = sorted(range(len(values)), key=lambda row: (-values[row], row))[:limit]
    assert rows.tolist() == expected
    assert scores.tolist() == [values[row] for row in expected]


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did we ship today", _day(2026, 12, 2), _day(2026, 12, 3)),
        ("¿qué desplegamos hoy?", _day(2026, 12, 2), _day(2026, 12, 3)),
        ("今天发布了什么", _day(2026, 12, 2), _day(2026, 12, 3)),
        ("decisions from yesterday", _day(2026, 12, 1), _day(2026, 12, 2)),
        ("lo que pasó ayer", _day(2026, 12, 1), _day(2026, 12, 2)),
        ("昨天的会议", _day(2026, 12, 1), _day(2026, 12, 2)),
        ("anteayer", _day(2026, 11, 30), _day(2026, 12, 1)),
        ("前天的事故", _day(2026, 11, 30), _day(2026, 12, 1)),
        ("incidents this week", _day(2026, 11, 30), _day(2026, 12, 7)),
        ("incidencias de esta semana", _day(2026, 11, 30), _day(2026, 12, 7)),
        ("本周的故障", _day(2026, 11, 30), _day(2026, 12, 7)),
        ("这周的故障", _day(2026, 11, 30), _day(2026, 12, 7)),
        ("what broke last week", _day(2026, 11, 23), _day(2026, 11, 30)),
        ("qué se rompió la semana pasada", _day(2026, 11, 23), _day(2026, 11, 30)),
        ("上周的发布", _day(2026, 11, 23), _day(2026, 11, 30)),
        ("this month's trades", _day(2026, 12, 1), _day(2027, 1, 1)),
        ("operaciones de este mes", _day(2026, 12, 1), _day(2027, 1, 1)),
        ("本月的交易", _day(2026, 12, 1), _day(2027, 1, 1)),
        ("last month's trades", _day(2026, 11, 1), _day(2026, 12, 1)),
        ("operaciones del mes pasado", _day(2026, 11, 1), _day(2026, 12, 1)),
        ("上个月的交易", _day(2026, 11, 1), _day(2026, 12, 1)),
        ("in 2025", _day(2025, 1, 1), _day(2026, 1, 1)),
        ("lo que hicimos en 2025", _day(2025, 1, 1), _day(2026, 1, 1)),
        ("2025年的回测", _day(2025, 1, 1), _day(2026, 1, 1)),
        ("last year", _day(2025, 1, 1), _day(2026, 1, 1)),
        ("el año pasado", _day(2025, 1, 1), _day(2026, 1, 1)),
        ("去年", _day(2025, 1, 1), _day(2026, 1, 1)),
        ("今年", _day(2026, 1, 1), _day(2027, 1, 1)),
        ("the outage on 2026-11-30", _day(2026, 11, 30), _day(2026, 12, 1)),
    ],
)
def test_time_words_become_calendar_windows(query: str, start: float, end: float) -> None:
    assert parse_time_window(query, NOW) == (start, end)


@pytest.mark.parametrize(
    ("query", "days"),
    [
        ("errors in the last 3 days", 3),
        ("past 10 days", 10),
        ("en los últimos 7 días", 7),
        ("最近3天的报警", 3),
        ("最近三天的报警", 3),
        ("过去十五天", 15),
    ],
)
def test_last_n_days_ends_now(query: str, days: int) -> None:
    window = parse_time_window(query, NOW)
    assert window is not None
    assert window[0] == NOW - days * 86_400
    assert window[1] > NOW
    assert window[1] - NOW < 1e-3


@pytest.mark.parametrize(
    "query",
    ["deploy the migration", "2026-13-45 is not a date", "in 12345 ways", "in 1492", "ayermismo", "todays"],
)
def test_queries_without_time_words_have_no_window(query: str) -> None:
    assert parse_time_window(query, NOW) is None


def test_calendar_days_are_those_of_the_given_timezone() -> None:
    shanghai = timezone(timedelta(hours=8))
    late_evening_utc = datetime(2026, 12, 2, 20, tzinfo=UTC).timestamp()  # already 3 December there
    start, end = parse_time_window("today", late_evening_utc, tz=shanghai) or (0.0, 0.0)
    assert start == datetime(2026, 12, 3, tzinfo=shanghai).timestamp()
    assert end == datetime(2026, 12, 4, tzinfo=shanghai).timestamp()


def test_temporal_rank_keeps_rows_inside_the_window_closest_to_its_end_first() -> None:
    times = np.array([_day(2026, 11, 20), _day(2026, 11, 29), _day(2026, 11, 24), _day(2026, 12, 1)])
    rows, scores = temporal_rank(np.arange(4), times, NOW, (_day(2026, 11, 23), _day(2026, 11, 30)), 10)
    assert rows.tolist() == [1, 2]
    assert scores[0] > scores[1] > 0


def test_temporal_rank_without_a_window_orders_by_recency() -> None:
    times = np.array([NOW - 86_400 * 5, NOW - 3_600, NOW - 86_400 * 40])
    rows, scores = temporal_rank(np.array([10, 11, 12]), times, NOW, None, 2)
    assert rows.tolist() == [11, 10]
    assert 0 < scores[1] < scores[0] <= 1
