"""Where an execution stands: its dispatcher's decision (accepted, rejected) once there is one, else its outcome."""

from __future__ import annotations

from resident.messages.coordination import Execution
from resident.messages.coordination_calls import ExecutionState

__all__ = ["state_of"]


def state_of(execution: Execution) -> ExecutionState:
    """Where `execution` stands: accepted or rejected once its dispatcher decided, else its outcome."""
    if execution.accepted_at is not None:
        return "accepted"
    if execution.rejected_at is not None:
        return "rejected"
    return execution.outcome
