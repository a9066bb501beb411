"""How a supervisor is told what to run: child specs, strategies and the child's context."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from resident.clock import Clock
from resident.supervisor.address import Address
from resident.supervisor.rules import Backoff

if TYPE_CHECKING:
    from resident.supervisor.actor import SupervisedActor

__all__ = ["ChildContext", "ChildExit", "ChildSpec", "RestartType", "Strategy", "SupervisorSpec"]

Strategy = Literal["one_for_one", "one_for_all", "rest_for_one"]
RestartType = Literal["permanent", "transient", "temporary"]


@dataclass(frozen=True)
class ChildSpec:
    """One child: what to start, how to restart it, and how long its start and stop may take.

    `permanent` children are always restarted, `transient` ones only after an abnormal exit (an
    error, a failed start, a kill), `temporary` ones never. `address` is the child's stable name;
    it outlives every incarnation of the child (and of its supervisor).
    """

    address: Address
    actor: type[SupervisedActor]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    restart: RestartType = "permanent"
    backoff: Backoff | None = None
    start_timeout: float = 5.0
    shutdown_timeout: float = 5.0

    @property
    def name(self) -> str:
        return self.address.name


@dataclass(frozen=True)
class SupervisorSpec:
    """A supervisor's strategy, restart intensity (`intensity` restarts per `period` s) and children."""

    name: str
    children: Sequence[ChildSpec]
    strategy: Strategy = "one_for_one"
    intensity: int = 3
    period: float = 5.0

    def __post_init__(self) -> None:
        names = [child.name for child in self.children]
        if len(set(names)) != len(names):
            raise ValueError(f"supervisor {self.name} has two children with the same name")


@dataclass(frozen=True, slots=True)
class ChildExit:
    """A child's report that one of its incarnations ended, and how."""

    name: str
    incarnation: int
    kind: Literal["normal", "error", "killed"]
    reason: str


@dataclass
class ChildContext:
    """What a supervised actor knows about its place in the tree; built anew for each incarnation."""

    name: str
    address: Address
    incarnation: int
    clock: Clock
    report: Callable[[ChildExit], None]
    start_error: BaseException | None = None
    expected_stop: bool = False
    # Set by the running actor when it cannot do all of its work; statistics show it as `degraded`.
    condition: str = ""
