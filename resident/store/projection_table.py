"""The one table of projections: for each event type, the check that may refuse it and the function that applies
it to the tables. `Store` and replay fold every event through `project`.

The table is built from the modules named here and nothing else: a module of projections that is not in
`MODULES` projects nothing, and two modules projecting one event type are refused when the table is built.
"""

from __future__ import annotations

from types import ModuleType

from resident.messages.base import Event
from resident.store import evolution_projections, projections, session_projections, skill_projections
from resident.store.projecting import MARK, Apply, Check
from resident.store.view import View

__all__ = ["MODULES", "PROJECTIONS", "project"]

# Memory, replication, knowledge, members and coordination; evolution (principles, engagement, records'
# weights); sessions; skills.
MODULES: tuple[ModuleType, ...] = (projections, evolution_projections, session_projections, skill_projections)


def _table(modules: tuple[ModuleType, ...]) -> dict[type[Event], tuple[Check | None, Apply]]:
    table: dict[type[Event], tuple[Check | None, Apply]] = {}
    for module in modules:
        for value in vars(module).values():
            marked = getattr(value, MARK, None)
            if marked is None or not callable(value):
                continue
            event_type, check = marked
            if event_type in table:
                raise TypeError(f"{event_type.__name__} is projected twice (again in {module.__name__})")
            table[event_type] = (check, value)
    return table


PROJECTIONS = _table(MODULES)


def project(view: View, event: Event) -> bool:
    """Apply `event` to `view` if its check allows; False when the event would change nothing."""
    try:
        check, apply = PROJECTIONS[type(event)]
    except KeyError:
        raise TypeError(f"no projection is registered for {type(event).__name__}") from None
    if check is not None and not check(view, event):
        return False
    apply(view, event)
    return True
