"""OTP-style supervision on top of pykka: stable addresses, restart strategies, backoff, statistics.

Callers hold an `Address` (a stable name), never a pykka ref; a `Supervisor` starts and restarts
`SupervisedActor` children by its `SupervisorSpec`; a `SupervisionTree` runs the root. Replies
travel as `Reply` slots so pipelines can pass a caller's reply along instead of blocking.
"""

from resident.supervisor.actor import ChaosCrash, StartFailed, SupervisedActor, UnknownMessage
from resident.supervisor.address import Address, Deliver, batching_outbox, flush_outbox
from resident.supervisor.reply import (
    AsyncReply,
    Completed,
    ForwardReply,
    Outcome,
    Reply,
    ThreadReply,
    settle_all,
)
from resident.supervisor.rules import Backoff, RestartWindow, Retries
from resident.supervisor.spec import (
    ChildContext,
    ChildExit,
    ChildSpec,
    RestartType,
    Strategy,
    SupervisorSpec,
)
from resident.supervisor.supervisor import StartChild, StatisticsBoard, Supervisor, SupervisorGaveUp
from resident.supervisor.tree import SupervisionTree
from resident.supervisor.wakeup import WakeUp, WakeUpState

__all__ = [
    "Address",
    "AsyncReply",
    "Backoff",
    "ChaosCrash",
    "ChildContext",
    "ChildExit",
    "ChildSpec",
    "Completed",
    "Deliver",
    "ForwardReply",
    "Outcome",
    "Reply",
    "RestartType",
    "RestartWindow",
    "Retries",
    "StartChild",
    "StartFailed",
    "StatisticsBoard",
    "Strategy",
    "SupervisedActor",
    "SupervisionTree",
    "Supervisor",
    "SupervisorGaveUp",
    "SupervisorSpec",
    "ThreadReply",
    "UnknownMessage",
    "WakeUp",
    "WakeUpState",
    "batching_outbox",
    "flush_outbox",
    "settle_all",
]
