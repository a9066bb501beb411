"""Helpers shared by the runtime-level memory tests: opening a home, counting writes, waiting."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from resident import Runtime
from resident.messages.memory import RecordsRecalled, VectorsFilled

__all__ = ["WORLDS", "event_count", "events_of", "open_runtime", "wait_until", "write_roster"]

# A roster with two worlds: deven and alice in `dev`, oliver and victor in `ops`, samuel in both.
WORLDS: dict[str, tuple[str, ...]] = {
    "samuel": ("dev", "ops"),
    "deven": ("dev",),
    "alice": ("dev",),
    "oliver": ("ops",),
    "victor": ("ops",),
}


def write_roster(home: Path, worlds: Mapping[str, Sequence[str]]) -> None:
    """Write a `resident.toml` giving each member its worlds (the home is created 0700)."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines: list[str] = []
    for name, member_worlds in worlds.items():
        listed = ", ".join(f'"{world}"' for world in member_worlds)
        lines += [f"[members.{name}]", f'role = "{name}"', f"worlds = [{listed}]", ""]
    (home / "resident.toml").write_text("\n".join(lines), encoding="utf-8")


def open_runtime(home: Path, *, worlds: Mapping[str, Sequence[str]] | None = None, **kwargs: Any) -> Runtime:
    """A runtime on `home` without Realm (records stay pending), with an optional roster."""
    if worlds is not None:
        write_roster(home, worlds)
    return Runtime.open(home, realm="none", **kwargs)


def events_of(rt: Runtime) -> list[Any]:
    """Every event in the home's log, oldest first."""
    with rt._internal.store.reader() as reader:
        return [event for _, event in reader.events()]


def event_count(rt: Runtime) -> int:
    """How many events the log holds, not counting the substrate's own bookkeeping.

    The substrate writes recall counts a little after a recall, and stores vectors it computed
    for records committed without one; those are not writes a caller made, so "nothing was
    written" comparisons leave them out.
    """
    return sum(1 for event in events_of(rt) if not isinstance(event, RecordsRecalled | VectorsFilled))


def wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """Poll `condition` until it holds or `timeout` passes; whether it held."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
