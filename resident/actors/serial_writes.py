"""One write at a time: how a member actor changes state it computes from its own earlier writes.

A skill use's new weight is computed from the holding as stored; if a second change were computed
while the first was still on its way to the store, it would start from a stale holding and one of
the two would be lost. So the member queues its evolution writes: each is planned (read the store,
apply the rules, produce events) only once the previous one is durable, and its caller is answered
then. The actor never blocks: it hands the commit to the writer with a forwarding reply and goes on
answering other messages (recall, reads) meanwhile.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from resident.errors import ActorUnavailable
from resident.messages.store import Commit
from resident.supervisor import Address, ForwardReply, Reply

__all__ = ["Plan", "SerialWrites"]

logger = logging.getLogger(__name__)

# What planning a write yields: the events to commit together (none: nothing changes) and the answer.
Plan = Callable[[], tuple[tuple[Any, ...], Any]]


@dataclass(frozen=True, slots=True)
class _Written:
    """The context a commit's outcome comes back with."""

    reply: Reply | None
    answer: Any
    what: str


class SerialWrites:
    """A queue of planned writes, at most one of them at the writer."""

    def __init__(self, name: str, writer: Address, home: Address) -> None:
        self._name = name
        self._writer = writer
        self._home = home
        self._waiting: deque[tuple[str, Plan, Reply | None]] = deque()
        self._in_flight = False

    def submit(self, what: str, plan: Plan, reply: Reply | None) -> None:
        """Plan and commit `plan` after every write submitted before it; settle `reply` when durable."""
        self._waiting.append((what, plan, reply))
        if not self._in_flight:
            self._next()

    def owns(self, context: Any) -> bool:
        return isinstance(context, _Written)

    def completed(self, context: _Written, error: BaseException | None) -> None:
        """The writer's outcome for the write in flight: answer its caller, then plan the next one."""
        self._in_flight = False
        if error is not None and context.reply is None:
            logger.warning("%s: %s was not written: %s", self._name, context.what, error)
        _settle(context.reply, None if error is not None else context.answer, error)
        self._next()

    def abandon(self) -> None:
        """Fail every waiting caller: the actor is going away (a crash); its next incarnation starts empty."""
        waiting, self._waiting = self._waiting, deque()
        for what, _plan, reply in waiting:
            _settle(reply, None, ActorUnavailable(f"{self._name} restarted before {what} was written; retry"))

    def _next(self) -> None:
        while self._waiting and not self._in_flight:
            what, plan, reply = self._waiting.popleft()
            try:
                events, answer = plan()
            except Exception as error:  # noqa: BLE001 - a refused plan goes back to its caller only
                if reply is None:
                    logger.warning("%s: %s refused: %s", self._name, what, error)
                _settle(reply, None, error)
                continue
            if not events:
                _settle(reply, answer, None)
                continue
            self._in_flight = True
            self._writer.tell(Commit(events=events), ForwardReply(self._home, _Written(reply, answer, what)))


def _settle(reply: Reply | None, value: Any, error: BaseException | None) -> None:
    if reply is None:
        return
    if error is not None:
        reply.fail(error)
    else:
        reply.resolve(value)
