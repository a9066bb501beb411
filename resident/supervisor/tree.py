"""The root of a supervision tree: starts the root supervisor and hears its escalations."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pykka

from resident.clock import Clock
from resident.messages.supervision import SupervisorStatistics
from resident.supervisor.address import Address
from resident.supervisor.spec import ChildContext, ChildExit, SupervisorSpec
from resident.supervisor.supervisor import StatisticsBoard, Supervisor, await_start

__all__ = ["SupervisionTree"]

logger = logging.getLogger(__name__)


class SupervisionTree:
    """Runs one root `Supervisor`; when the root gives up, `on_escalate` hears why.

    The root has no parent to restart it, so its escalation ends the tree: the owner (the
    runtime) logs the reason and stops.
    """

    def __init__(
        self,
        spec: SupervisorSpec,
        clock: Clock,
        on_escalate: Callable[[str], None],
        *,
        start_timeout: float = 60.0,
    ) -> None:
        self.spec = spec
        self.board = StatisticsBoard(spec)
        self.address = Address(spec.name)
        self._clock = clock
        self._on_escalate = on_escalate
        self._start_timeout = start_timeout
        self._ref: pykka.ActorRef[Any] | None = None
        self._context: ChildContext | None = None

    def start(self) -> None:
        """Start the root supervisor and every child; raise the first start failure."""
        context = ChildContext(
            name=self.spec.name,
            address=self.address,
            incarnation=1,
            clock=self._clock,
            report=self._root_exited,
        )
        ref = Supervisor.start(context, spec=self.spec, board=self.board)
        try:
            await_start(ref, self._start_timeout)
        except Exception as error:  # noqa: BLE001 - pykka.Timeout, ActorDeadError or the start error
            cause = context.start_error or error
            if ref.is_alive():
                ref.stop(block=False)
            raise cause from None
        self._ref, self._context = ref, context
        self.address.attach(ref)

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the tree in reverse start order; False when it did not finish within `timeout`."""
        ref, context = self._ref, self._context
        self._ref = None
        if ref is None or context is None:
            return True
        context.expected_stop = True
        self.address.detach()
        try:
            ref.stop(block=False).get(timeout=timeout)
        except pykka.Timeout:
            logger.error("the supervision tree did not stop within %g s", timeout)
            return False
        except pykka.ActorDeadError:
            return True
        return True

    def statistics(self) -> SupervisorStatistics:
        return self.board.snapshot()

    def _root_exited(self, exit_: ChildExit) -> None:
        if exit_.kind == "normal":
            return
        logger.error("root supervisor %s escalated: %s", self.spec.name, exit_.reason)
        self._ref = None
        self._on_escalate(exit_.reason)
