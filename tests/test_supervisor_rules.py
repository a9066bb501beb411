"""The pure rules of supervision — the restart-intensity window and backoff delays — and ManualClock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resident.clock import ManualClock
from resident.supervisor import Backoff, RestartWindow, Retries

# -- RestartWindow ----------------------------------------------------------------------------------


def test_window_admits_intensity_restarts_in_a_period_and_refuses_the_next() -> None:
    window = RestartWindow(intensity=3, period=10.0)
    assert [window.admit(t) for t in (0.0, 1.0, 2.0)] == [True, True, True]
    assert window.admit(3.0) is False


def test_a_restart_exactly_one_period_ago_still_counts() -> None:
    window = RestartWindow(intensity=1, period=10.0)
    assert window.admit(0.0)
    assert window.admit(10.0) is False  # OTP counts restarts with now - t =< period


def test_a_restart_older_than_the_period_no_longer_counts() -> None:
    window = RestartWindow(intensity=1, period=10.0)
    assert window.admit(0.0)
    assert window.admit(10.001)
    assert window.count(10.001) == 1


def test_intensity_zero_refuses_the_first_restart() -> None:
    assert RestartWindow(intensity=0, period=1.0).admit(0.0) is False


def test_refused_attempts_count_too_so_a_crash_loop_stays_refused() -> None:
    window = RestartWindow(intensity=2, period=10.0)
    assert [window.admit(t) for t in (0.0, 1.0, 2.0, 9.0)] == [True, True, False, False]
    assert window.count(9.0) == 4


def test_clear_forgets_every_restart() -> None:
    window = RestartWindow(intensity=1, period=10.0)
    window.admit(0.0)
    window.clear()
    assert window.count(0.0) == 0
    assert window.admit(0.0)


@pytest.mark.parametrize(("intensity", "period"), [(-1, 1.0), (1, 0.0), (1, -1.0)])
def test_window_rejects_a_negative_intensity_or_a_non_positive_period(intensity: int, period: float) -> None:
    with pytest.raises(ValueError, match="intensity"):
        RestartWindow(intensity, period)


def _restart_times() -> st.SearchStrategy[list[float]]:
    # Times in milliseconds keep the arithmetic exact, so the reference and the window agree on
    # boundaries instead of on rounding.
    gaps = st.lists(st.integers(min_value=0, max_value=3_000), max_size=60)
    return gaps.map(lambda ms: [float(sum(ms[: i + 1])) / 1000.0 for i in range(len(ms))])


@given(
    times=_restart_times(),
    intensity=st.integers(min_value=0, max_value=6),
    period=st.integers(min_value=1, max_value=5_000).map(lambda ms: ms / 1000.0),
)
def test_window_never_admits_more_than_intensity_in_any_period(
    times: list[float], intensity: int, period: float
) -> None:
    window = RestartWindow(intensity, period)
    admitted = [t for t in times if window.admit(t)]
    for end in admitted:
        in_window = [t for t in admitted if 0.0 <= end - t <= period]
        assert len(in_window) <= intensity


@given(
    times=_restart_times(),
    intensity=st.integers(min_value=0, max_value=6),
    period=st.integers(min_value=1, max_value=5_000).map(lambda ms: ms / 1000.0),
)
def test_window_agrees_with_a_brute_force_reference(times: list[float], intensity: int, period: float) -> None:
    window = RestartWindow(intensity, period)
    attempts: list[float] = []
    for now in times:
        attempts.append(now)
        recent = [t for t in attempts if now - t <= period]
        assert window.admit(now) == (len(recent) <= intensity)
        assert window.count(now) == len(recent)


# -- Backoff ----------------------------------------------------------------------------------------


def test_backoff_doubles_from_min_and_is_capped_at_max() -> None:
    backoff = Backoff(min=0.1, max=1.0, jitter=0.0)
    delays = [backoff.delay(n, 0.0) for n in range(1, 8)]
    assert delays == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0])


def test_backoff_jitter_stretches_the_delay_by_at_most_the_jitter_fraction() -> None:
    backoff = Backoff(min=1.0, max=4.0, jitter=0.5)
    assert backoff.delay(2, 0.0) == pytest.approx(2.0)
    assert backoff.delay(2, 0.999) == pytest.approx(2.0 * (1 + 0.5 * 0.999))


def test_backoff_survives_an_absurd_number_of_restarts() -> None:
    assert Backoff(min=0.1, max=3.0, jitter=0.0).delay(10**9, 0.0) == 3.0
    assert Backoff(min=0.0, max=3.0, jitter=0.0).delay(10**9, 0.0) == 0.0


def test_backoff_grows_by_its_multiplier() -> None:
    backoff = Backoff(min=1.0, max=100.0, jitter=0.0, multiplier=3.0)
    assert [backoff.delay(n, 0.0) for n in range(1, 7)] == pytest.approx([1.0, 3.0, 9.0, 27.0, 81.0, 100.0])
    assert Backoff(min=2.0, max=100.0, jitter=0.0, multiplier=1.0).delay(50, 0.0) == 2.0


def test_retries_wait_longer_after_each_failure_in_a_row_and_start_over_after_a_success() -> None:
    retries = Retries(Backoff(min=1.0, max=30.0, jitter=0.0))
    assert retries.next_wait() == 1.0
    assert [retries.failed() for _ in range(7)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert retries.failures == 7
    assert retries.next_wait() == 30.0
    assert retries.failures == 7  # looking ahead counts nothing
    retries.succeeded()
    assert (retries.failures, retries.failed()) == (0, 1.0)


def test_retries_draw_their_jitter_from_the_source_they_are_given() -> None:
    retries = Retries(Backoff(min=1.0, max=8.0, jitter=0.5), random_fraction=lambda: 0.5)
    assert retries.failed() == pytest.approx(1.25)
    assert retries.failed() == pytest.approx(2.5)


@pytest.mark.parametrize(
    "kwargs",
    [{"min": -1.0}, {"min": 2.0, "max": 1.0}, {"jitter": -0.1}, {"reset_after": -1.0}, {"multiplier": 0.5}],
)
def test_backoff_rejects_inconsistent_parameters(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(**kwargs)


_backoffs = st.builds(
    lambda low, spread, jitter, multiplier: Backoff(min=low, max=low + spread, jitter=jitter, multiplier=multiplier),
    st.floats(min_value=0.0, max_value=10.0),
    st.floats(min_value=0.0, max_value=100.0),
    st.floats(min_value=0.0, max_value=2.0),
    st.floats(min_value=1.0, max_value=10.0),
)


@given(backoff=_backoffs, n=st.integers(min_value=0, max_value=200), fraction=st.floats(min_value=0.0, max_value=1.0))
def test_backoff_delay_stays_between_min_and_max_with_jitter(backoff: Backoff, n: int, fraction: float) -> None:
    fraction = min(fraction, 0.999999)  # random() is in [0, 1)
    delay = backoff.delay(n, fraction)
    assert backoff.min <= delay <= backoff.max * (1 + backoff.jitter)


@given(backoff=_backoffs, n=st.integers(min_value=0, max_value=200))
def test_backoff_without_jitter_never_shrinks_as_restarts_go_on(backoff: Backoff, n: int) -> None:
    assert backoff.delay(n, 0.0) <= backoff.delay(n + 1, 0.0)


# -- ManualClock ------------------------------------------------------------------------------------


def test_manual_clock_runs_callbacks_only_when_advanced_past_them_in_due_order() -> None:
    clock = ManualClock(start=0.0)
    ran: list[str] = []
    clock.call_later(2.0, lambda: ran.append("second"))
    clock.call_later(1.0, lambda: ran.append("first"))
    clock.advance(0.999)
    assert ran == []
    clock.advance(0.001)
    assert ran == ["first"]
    clock.advance(5.0)
    assert ran == ["first", "second"]
    assert clock.monotonic() == 6.0


def test_manual_clock_shows_due_time_to_callbacks_and_runs_ones_they_schedule() -> None:
    clock = ManualClock(start=0.0)
    seen: list[float] = []

    def first() -> None:
        seen.append(clock.monotonic())
        clock.call_later(1.0, lambda: seen.append(clock.monotonic()))

    clock.call_later(1.0, first)
    clock.advance(3.0)
    assert seen == [1.0, 2.0]


def test_manual_clock_does_not_run_cancelled_callbacks() -> None:
    clock = ManualClock()
    ran: list[int] = []
    timer = clock.call_later(1.0, lambda: ran.append(1))
    assert clock.pending() == 1
    timer.cancel()
    assert clock.pending() == 0
    clock.advance(2.0)
    assert ran == []
