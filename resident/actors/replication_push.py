"""The pusher: which pending records go to Realm next, and where the push in flight stands.

It works from the pending index in LMDB (`PENDING`, written with each record), so a record is
pushed whether or not anyone told replication about it. One push at a time goes through these
phases:

    idle ──start──▶ requesting ──answered──▶ committing ──committed──▶ idle
                       │  ▲                                 │
             transient │  │ wait over (a scheduled message) │ commit failed
                       ▼  │                                 ▼
                     backoff ──out of attempts──────────▶ resting ──rest over / sync──▶ idle

A transient fault (down, slow, 5xx, garbage) is retried with tenacity's stop policy and the
runtime's one `Backoff` as its wait: at most `max_attempts` requests per push, each wait longer
than the one before, with jitter. Out of attempts, the
pusher rests for `retry_later` and records written meanwhile wait for that one retry. A refusal
(4xx) is not retried blindly: a batch is split to find the records Realm refuses, and those are
parked until an explicit sync. A sync ends a rest, unparks, and skips a backoff wait.

This object holds state and makes decisions; the actor does the I/O and the scheduling.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Literal

import tenacity

from resident.messages.memory import AWAITING_REALM, MemoryRecord
from resident.store.store import Reader
from resident.store.tables import PENDING, RECORDS
from resident.supervisor import Backoff

__all__ = ["Flight", "PushPhase", "PushSettings", "Pusher"]

PushPhase = Literal["idle", "requesting", "committing", "backoff", "resting"]
# What a record costs in a request beyond its text (ids, digest, field names).
RECORD_OVERHEAD_BYTES = 512


@dataclass(frozen=True)
class PushSettings:
    batch_records: int
    batch_bytes: int
    max_attempts: int
    # The wait before attempt n+1 is `backoff.delay(n)`.
    backoff: Backoff


@dataclass
class Flight:
    """The batch being pushed, across its attempts; `cycle` names it (a sync starts a new one)."""

    cycle: int
    ids: tuple[str, ...]
    retry: tenacity.RetryCallState


class Pusher:
    """Push state: the phase, the flight, parked records and what to report."""

    def __init__(self, settings: PushSettings) -> None:
        self.settings = settings
        self._random = random.Random()
        # tenacity counts the attempts and says when to stop; how long to wait is the runtime's one
        # backoff policy, as for restarts and the writer's and substrate's retries.
        self._policy = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(settings.max_attempts),
            wait=lambda state: settings.backoff.delay(state.attempt_number, self._random.random()),
        )
        self.phase: PushPhase = "idle"
        self.flight: Flight | None = None
        self.parked: dict[str, str] = {}
        self._singles: deque[str] = deque()
        self._cycle = 0
        self.rest = 0
        self.pushes = 0
        self.requests = 0
        self.error = ""
        self.retrying = False

    # -- choosing what to push --------------------------------------------------------------------

    def next_batch(self, reader: Reader, excluded: frozenset[str]) -> list[MemoryRecord]:
        """The next records to push: one being singled out after a refusal, else the oldest pending ones."""
        while self._singles:
            record = _awaiting(reader, self._singles.popleft())
            if record is not None:
                return [record]
        batch: list[MemoryRecord] = []
        size = 0
        for record_id, _entry in reader.items(PENDING):
            if record_id in self.parked or record_id in excluded:
                continue
            record = _awaiting(reader, record_id)
            if record is None:
                continue
            size += len(record.body.encode("utf-8")) + len(record.summary.encode("utf-8")) + RECORD_OVERHEAD_BYTES
            if batch and size > self.settings.batch_bytes:
                break
            batch.append(record)
            if len(batch) >= self.settings.batch_records:
                break
        return batch

    def has_unparked(self, reader: Reader) -> bool:
        """Whether any record still waits for a push (parked ones wait for a sync)."""
        return any(record_id not in self.parked for record_id, _ in reader.items(PENDING))

    # -- the flight -------------------------------------------------------------------------------

    def start(self, ids: tuple[str, ...]) -> Flight:
        """A new push of `ids`; its first request goes out now."""
        flight = self._new_flight(ids)
        self.attempt(flight, ids)
        return flight

    def _new_flight(self, ids: tuple[str, ...]) -> Flight:
        self._cycle += 1
        self.pushes += 1
        retry = tenacity.RetryCallState(retry_object=self._policy, fn=None, args=(), kwargs={})
        self.flight = Flight(cycle=self._cycle, ids=ids, retry=retry)
        return self.flight

    def attempt(self, flight: Flight, ids: tuple[str, ...]) -> None:
        """The flight's next request goes out (with `ids`: those still pending)."""
        flight.ids = ids
        self.phase = "requesting"
        self.requests += 1

    def is_current(self, cycle: int, attempt: int) -> bool:
        flight = self.flight
        return flight is not None and (flight.cycle, flight.retry.attempt_number) == (cycle, attempt)

    def answered(self) -> None:
        """Realm answered; its verdicts are being committed."""
        self.phase = "committing"
        self.retrying = False
        self.error = ""

    def failed(self, error: str) -> float | None:
        """A transient fault: the wait before the next attempt, or None when out of attempts (resting)."""
        self.error = error
        self.retrying = True
        flight = self.flight
        if flight is None:
            return None
        if self._policy.stop(flight.retry):  # attempt_number is the attempt that just failed
            self.rest_now()
            return None
        delay = float(self._policy.wait(flight.retry))
        flight.retry.attempt_number += 1
        self.phase = "backoff"
        return delay

    def refused(self, error: str) -> str | None:
        """Realm refused the request as bad: split a batch, park a single record (its id returned)."""
        flight = self.flight
        self.error = error
        self.flight = None
        self.phase = "idle"
        if flight is None:
            return None
        if len(flight.ids) > 1:
            self._singles.extend(flight.ids)
            return None
        self.parked[flight.ids[0]] = error
        return flight.ids[0]

    def done(self) -> None:
        """The flight's verdicts are durable (or none of its records is pending any more)."""
        self.flight = None
        self.phase = "idle"

    def rest_now(self, error: str | None = None) -> int:
        """Push nothing until the rest numbered by the return value is over (or a sync asks)."""
        if error is not None:
            self.error = error
        self.flight = None
        self.phase = "resting"
        self.rest += 1
        return self.rest

    def rest_over(self, rest: int) -> bool:
        if self.phase != "resting" or rest != self.rest:
            return False
        self.phase = "idle"
        return True

    def sync(self) -> Flight | None:
        """A sync: unpark, end a rest, and return a flight to send at once if one was waiting out a backoff.

        The returned flight is a new push (attempts of its own) whose first request the caller sends
        with `attempt`; the retry still scheduled names the old push and finds itself stale.
        """
        self.parked.clear()
        if self.phase == "resting":
            self.rest += 1  # its scheduled end is stale now
            self.phase = "idle"
        flight = self.flight
        if self.phase != "backoff" or flight is None:
            return None
        return self._new_flight(flight.ids)


def _awaiting(reader: Reader, record_id: str) -> MemoryRecord | None:
    record = reader.get(RECORDS, record_id)
    if record is None or record.replication not in AWAITING_REALM:
        return None
    return record
