"""Reply slots: where the outcome of one request goes, and how many outcomes go back at once.

A request that expects an answer carries a `Reply`. The sender creates it, each stage of a
pipeline passes it along (continuation style, so no actor blocks waiting on another), and the
stage that finishes the work settles it. Three kinds exist:

* `ThreadReply` — a caller thread blocks on it with a timeout;
* `AsyncReply` — an asyncio task awaits it without blocking its event loop;
* `ForwardReply` — the outcome becomes a message to another actor (a pipeline stage).

`settle_all()` hands a whole batch back together: one `call_soon_threadsafe` per event loop and one
message per forwarding target, however many outcomes the batch holds. That is what keeps group
commit cheap for thousands of waiting tasks.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from resident.errors import AskTimeout

__all__ = [
    "AsyncReply",
    "Completed",
    "ForwardReply",
    "Outcome",
    "Reply",
    "ThreadReply",
    "settle_all",
]

# Settling must be first-wins across threads (an actor and a crash path may race); one tiny lock
# held for a handful of bytecodes is cheaper than a lock per reply.
_settle_lock = threading.Lock()

# A `None` reply means nobody waits for that outcome; `settle_all` skips it.
Outcome = tuple["Reply | None", Any, BaseException | None]


class Reply:
    """Where the outcome of one request goes. Settling it a second time does nothing."""

    __slots__ = ()

    @property
    def cancelled(self) -> bool:
        """True when nobody waits for the outcome any more (timed out, cancelled)."""
        return False

    def resolve(self, value: Any) -> None:
        """Settle with a value."""
        settle_all(((self, value, None),))

    def fail(self, error: BaseException) -> None:
        """Settle with an error, raised to whoever waits."""
        settle_all(((self, None, error),))


class ThreadReply(Reply):
    """A reply a thread waits on with `wait(timeout)`."""

    __slots__ = ("_cancelled", "_error", "_gate", "_settled", "_value", "what")

    def __init__(self, what: str = "request") -> None:
        # A held lock is CPython's cheapest one-shot wake-up; settling releases it.
        self._gate = threading.Lock()
        self._gate.acquire()
        self._settled = False
        self._cancelled = False
        self._value: Any = None
        self._error: BaseException | None = None
        self.what = what

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def _settle(self, value: Any, error: BaseException | None) -> None:
        with _settle_lock:
            if self._settled:
                return
            self._settled = True
            self._value = value
            self._error = error
        self._gate.release()

    def wait(self, timeout: float) -> Any:
        """Block until settled and return the value (or raise the error); `AskTimeout` after `timeout`."""
        if not self._gate.acquire(timeout=max(0.0, timeout)):
            with _settle_lock:
                if not self._settled:
                    self._cancelled = True
                    raise AskTimeout(f"{self.what} got no answer within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self._value


class AsyncReply(Reply):
    """A reply an asyncio task awaits; settled from any thread without blocking the loop."""

    __slots__ = ("future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop if loop is not None else asyncio.get_running_loop()
        self.future: asyncio.Future[Any] = self.loop.create_future()

    @property
    def cancelled(self) -> bool:
        # A done future was settled, timed out or cancelled: nobody waits for a new outcome.
        # Read from other threads; a stale False only means the work is done for nobody.
        return self.future.done()


@dataclass(frozen=True, slots=True)
class Completed:
    """The outcomes of earlier requests, delivered as one message to the actor that forwarded them."""

    outcomes: tuple[tuple[Any, Any, BaseException | None], ...]


class _Target(Protocol):
    def tell(self, message: Any) -> None: ...


class ForwardReply(Reply):
    """A reply that becomes part of a `Completed` message to `target`, tagged with `context`."""

    __slots__ = ("context", "target")

    def __init__(self, target: _Target, context: Any) -> None:
        self.target = target
        self.context = context


def _set_async_outcomes(items: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, value, error in items:
        if future.done():
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)


def settle_all(outcomes: Iterable[Outcome]) -> None:
    """Settle many replies with as few cross-thread hand-offs as possible."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any, BaseException | None]]]
    by_loop = defaultdict(list)
    by_target: dict[int, tuple[_Target, list[tuple[Any, Any, BaseException | None]]]] = {}
    for reply, value, error in outcomes:
        if isinstance(reply, ThreadReply):
            reply._settle(value, error)
        elif isinstance(reply, AsyncReply):
            by_loop[reply.loop].append((reply.future, value, error))
        elif isinstance(reply, ForwardReply):
            entry = by_target.get(id(reply.target))
            if entry is None:
                entry = by_target[id(reply.target)] = (reply.target, [])
            entry[1].append((reply.context, value, error))
    for loop, items in by_loop.items():
        _hand_to_loop(loop, _set_async_outcomes, items)
    for target, items in by_target.values():
        target.tell(Completed(tuple(items)))


def _hand_to_loop(loop: asyncio.AbstractEventLoop, func: Callable[[Any], None], items: Any) -> None:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        func(items)
        return
    try:
        loop.call_soon_threadsafe(func, items)
    except RuntimeError:
        # The loop was closed: its awaiting tasks are gone, so there is nobody left to tell.
        return
