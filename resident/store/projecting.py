"""How a projection is declared: `@projection(EventType, check)` marks a function as the one that applies that
event to the tables, with an optional check that may refuse it.

The mark is an attribute on the function, not an entry in a registry, so importing a module of projections
changes nothing; `resident.store.projection_table` names the modules and builds the one table from their marks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from resident.messages.base import Event
from resident.store.view import View

__all__ = ["MARK", "Apply", "Check", "projection"]

E = TypeVar("E", bound=Event)
Check = Callable[[View, Any], bool]
Apply = Callable[[View, Any], None]
# The attribute a marked function carries: (event type, check or None).
MARK = "__projects__"


def projection(event_type: type[E], check: Callable[[View, E], bool] | None = None) -> Callable[
    [Callable[[View, E], None]], Callable[[View, E], None]
]:
    """Mark `apply` (the decorated function) as the projection of `event_type`, with an optional `check`."""

    def mark(apply: Callable[[View, E], None]) -> Callable[[View, E], None]:
        setattr(apply, MARK, (event_type, check))
        return apply

    return mark
