"""Operations, each declared once (`declaration`), and the facade derived from them (`facade`).

One module per capability holds its declarations, its `OPERATIONS` and the surfaces that offer them.

Light on purpose: msgspec and the message structs only, so the remote client and the command line
load the whole table without the runtime.
"""

from __future__ import annotations

from typing import Any

from resident.operations import (
    apps,
    cognition,
    coordination,
    engagement,
    evolution,
    home,
    knowledge,
    memory,
    portability,
    principles,
    replication,
    sessions,
    skills,
)
from resident.operations.declaration import Access, Operation, Route, declare

__all__ = ["DECLARED", "Access", "Operation", "Route", "declare"]

# Every operation declared this way, capability by capability, in the order the API lists them.
DECLARED: tuple[Operation[Any, Any, Any], ...] = (
    *home.OPERATIONS, *memory.OPERATIONS, *portability.OPERATIONS, *replication.OPERATIONS, *apps.OPERATIONS,
    *principles.OPERATIONS, *skills.OPERATIONS, *engagement.OPERATIONS, *evolution.OPERATIONS,
    *coordination.OPERATIONS, *knowledge.OPERATIONS, *sessions.OPERATIONS,
    *cognition.OPERATIONS,
)
