"""The pusher's retries: tenacity says when a push stops, the runtime's one `Backoff` how long it waits."""

from __future__ import annotations

from resident.actors.replication import ReplicationSettings
from resident.actors.replication_push import Pusher


def test_a_push_waits_by_the_backoff_between_attempts_and_rests_after_the_last() -> None:
    settings = ReplicationSettings(max_attempts=4, wait_initial=0.1, wait_max=0.3, jitter=0.0)
    pusher = Pusher(settings.push())
    flight = pusher.start(("mem_a",))
    waits = []
    for _ in range(settings.max_attempts - 1):
        waits.append(pusher.failed("Realm is down"))
        assert pusher.phase == "backoff"
        pusher.attempt(flight, flight.ids)
    assert waits == [settings.backoff.delay(n, 0.0) for n in (1, 2, 3)] == [0.1, 0.2, 0.3]
    assert pusher.failed("Realm is down") is None
    assert (pusher.phase, pusher.flight, pusher.requests) == ("resting", None, settings.max_attempts)


def test_jitter_stretches_a_wait_by_at_most_its_fraction() -> None:
    settings = ReplicationSettings(max_attempts=2, wait_initial=1.0, wait_max=1.0, jitter=0.5)
    for _ in range(50):
        pusher = Pusher(settings.push())
        pusher.start(("mem_a",))
        wait = pusher.failed("Realm is down")
        assert wait is not None
        assert 1.0 <= wait < 1.5
