"""Messages the supervisor exchanges with its children, and the statistics snapshot it publishes."""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Message, Record

__all__ = [
    "ChildState",
    "ChildStatistics",
    "Crash",
    "ExitKind",
    "Ping",
    "Pong",
    "SupervisorStatistics",
]

# `degraded`: running, but saying it cannot do all of its work (`condition` says why).
ChildState = Literal["starting", "running", "degraded", "restarting", "backoff", "stopped", "failed"]
ExitKind = Literal["normal", "shutdown", "error", "start_failed", "killed"]


class Ping(Message, frozen=True, tag="ping"):
    """Asked of a child right after it starts: an answer proves `on_start` finished."""


class Pong(Message, frozen=True, tag="pong"):
    incarnation: int


class Crash(Message, frozen=True, tag="crash"):
    """Makes the receiving actor fail on purpose (chaos testing, demos).

    `kind="error"` raises an ordinary exception in a tell handler; `kind="exit"` raises
    `SystemExit`, which plain pykka would turn into stopping every actor in the process.
    """

    reason: str = "chaos"
    kind: Literal["error", "exit"] = "error"


class ChildStatistics(Record, frozen=True):
    """One supervised actor, as its supervisor sees it at one instant."""

    name: str
    state: ChildState
    restart: Literal["permanent", "transient", "temporary"]
    incarnation: int
    restarts_in_window: int
    total_restarts: int
    buffered: int
    dead_letters: int
    last_exit: str = ""
    # Why a running actor is degraded (empty while it is healthy), in its own words.
    condition: str = ""


class SupervisorStatistics(Record, frozen=True):
    """An immutable snapshot of a supervisor and, flattened with `/` paths, its nested supervisors."""

    name: str
    strategy: Literal["one_for_one", "one_for_all", "rest_for_one"]
    intensity: int
    period: float
    children: tuple[ChildStatistics, ...]
    escalated: str = ""

    def child(self, name: str) -> ChildStatistics:
        """The statistics of the child at `name` (a nested child is `members/deven`)."""
        for child in self.children:
            if child.name == name:
                return child
        raise KeyError(name)
