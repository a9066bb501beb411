"""An actor's I/O worker: one thread that makes its network calls, results coming back as messages.

An actor must keep answering status, sync and stop while a peer is slow, so it never waits on the
network in a handler. It hands the call to its worker instead; when the call returns (or fails)
the worker tells the actor a `Done` carrying the tag it was given and the outcome. Calls run one
at a time, in the order given. A worker belongs to one incarnation of its actor: once the actor
is gone its results are dropped (what they would have changed is decided again from LMDB).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pykka

__all__ = ["Done", "IoWorker"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Done:
    """The outcome of one call: `value`, or the `error` it raised."""

    tag: Any
    value: Any = None
    error: BaseException | None = None


class IoWorker:
    """One named thread running `run()` calls in order, telling each outcome to `deliver`."""

    def __init__(self, name: str, deliver: Callable[[Done], None]) -> None:
        self._deliver = deliver
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-io")
        self._futures: set[Future[Any]] = set()
        self._lock = threading.Lock()  # the worker thread removes what the actor's thread adds
        self._closed = False

    def run(self, tag: Any, call: Callable[[], Any]) -> None:
        """Run `call` on the worker thread; its outcome comes back as `Done(tag, ...)`."""
        if self._closed:
            return
        future = self._executor.submit(call)
        with self._lock:
            self._futures.add(future)
        future.add_done_callback(lambda done: self._finished(tag, done))

    def _finished(self, tag: Any, future: Future[Any]) -> None:
        with self._lock:
            self._futures.discard(future)
        if future.cancelled():
            return
        error = future.exception()
        outcome = Done(tag, error=error) if error is not None else Done(tag, value=future.result())
        try:
            self._deliver(outcome)
        except pykka.ActorDeadError:
            return  # the incarnation that asked is gone; its successor decides again from LMDB

    def close(self, last: Callable[[], None] | None = None) -> None:
        """Drop calls not started yet, run `last` after the running one, and let the thread end.

        Does not wait: the running call is bounded by its own timeout.
        """
        if self._closed:
            return
        self._closed = True
        with self._lock:
            pending = list(self._futures)
        for future in pending:
            future.cancel()
        if last is not None:
            self._executor.submit(_logged, last)
        self._executor.shutdown(wait=False)


def _logged(call: Callable[[], None]) -> None:
    try:
        call()
    except Exception:
        logger.exception("an I/O worker's closing call failed")
