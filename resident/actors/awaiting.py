"""Callers awaiting a running execution's end, kept outside the coordinator so a restart does not lose them.

The runtime makes one `Awaiting` and hands it to every incarnation of the coordinator (its child spec's
arguments are the same objects each time), so a caller whose `await` was pending when the coordinator
crashed is still answered when the execution ends. A caller that stopped waiting (its ask timed out) is
dropped the next time its execution is looked at, so abandoned waits do not pile up.
"""

from __future__ import annotations

import threading

from resident.supervisor import Reply

__all__ = ["Awaiting"]


class Awaiting:
    """The replies waiting for each execution's end, by execution id (safe to use from any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: dict[str, list[Reply]] = {}

    def add(self, execution_id: str, reply: Reply) -> None:
        """Wait for `execution_id`'s end with `reply`; replies nobody waits on any more are dropped here."""
        with self._lock:
            live = [r for r in self._replies.get(execution_id, []) if not r.cancelled]
            self._replies[execution_id] = [*live, reply]

    def take(self, execution_id: str) -> list[Reply]:
        """The replies waiting for `execution_id`, no longer held here (the caller settles them)."""
        with self._lock:
            return self._replies.pop(execution_id, [])

    def executions(self) -> list[str]:
        """The executions someone waits for."""
        with self._lock:
            return list(self._replies)
