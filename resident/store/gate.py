"""Who may use the memory map at once: readers share it; growing it or closing it excludes them.

LMDB can resize its map only while this process has no transaction open, and closing the
environment under an open read transaction would pull the map from under it. Every read (and
every copy, which is one long read) therefore holds the gate shared; a resize holds it exclusive;
close waits for the readers to leave.

Every wait has a deadline. A reader stuck behind a resize that waits for a long copy, or a resize
that waits for that copy, gives up with `StoreBusy` instead of hanging; a close whose readers do
not leave in time leaves the environment open (the process is going away) rather than closing it
under them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from resident.errors import StoreBusy, StoreClosed

__all__ = ["DEFAULT_DEADLINE", "MapGate"]

# Long enough for a backup copy of a large home to finish, short enough that nothing hangs.
DEFAULT_DEADLINE = 30.0


class MapGate:
    """Shared use of the map by readers, exclusive use by a resize, and a close that drains readers."""

    def __init__(self, deadline: float = DEFAULT_DEADLINE) -> None:
        self.deadline = deadline
        self._condition = threading.Condition()
        self._readers = 0
        self._resizing = False
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the map for a read: not while it is being resized, never after close."""
        with self._condition:
            if not self._condition.wait_for(lambda: not self._resizing, timeout=self.deadline):
                raise StoreBusy(
                    f"a read waited {self.deadline:g} s for the store's map to grow (held up by a long "
                    "copy such as a backup); retry when it has finished"
                )
            if self._closed:
                raise StoreClosed("the store is closed; open the runtime again")
            self._readers += 1
        try:
            yield
        finally:
            with self._condition:
                self._readers -= 1
                if not self._readers:
                    self._condition.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the map alone (to resize it): new readers wait, and this waits for current ones to leave."""
        with self._condition:
            self._resizing = True
            if not self._condition.wait_for(lambda: not self._readers, timeout=self.deadline):
                self._resizing = False
                self._condition.notify_all()
                raise StoreBusy(
                    f"the store's map could not grow: a read (a backup copy?) held it for more than "
                    f"{self.deadline:g} s; nothing was written — retry when it has finished"
                )
        try:
            yield
        finally:
            with self._condition:
                self._resizing = False
                self._condition.notify_all()

    def close(self) -> bool:
        """Refuse new readers and wait for the current ones; False if they did not leave in time."""
        with self._condition:
            self._closed = True
            return self._condition.wait_for(lambda: not self._readers, timeout=self.deadline)
