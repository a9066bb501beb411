"""The executions index: execution ids by member, by state and by the grant their grant was derived from.

Listing a member's or a state's executions, the runner's search for waiting ones and a coordinator's own
dispatches read the index, so their cost follows what they return, not the home's history. The index is a
state table the projections keep (`index_started` when an execution is recorded, `reindex` when its state
changes), so a replay of the log rebuilds it. Each execution has one key in each of `FAMILIES` families:

* `m␟MEMBER␟STATE␟STARTED␟ID` — a member's, by state, oldest first;
* `s␟STATE␟STARTED␟ID` — a state's, oldest first;
* `g␟PARENT␟STARTED␟ID` — those whose grant was derived from grant PARENT (a coordinator's dispatches).

A home whose executions were recorded before the index existed has fewer keys than `FAMILIES` per execution
(`covers`): readers then scan the executions as before, until a replay rebuilds the index whole.
"""

from __future__ import annotations

from collections.abc import Iterator

from resident.coordination.states import state_of
from resident.messages.coordination import Execution
from resident.messages.coordination_calls import ExecutionState
from resident.store.reader import Reader
from resident.store.tables import EXECUTION_INDEX, EXECUTIONS, GRANTS
from resident.store.view import View

__all__ = ["FAMILIES", "covers", "index_started", "indexed", "reindex"]

FAMILIES = 3
# Unit separator: no member name, state, grant or execution id holds it, so a prefix never runs into another's.
_SEP = "\x1f"


def _started(execution: Execution) -> str:
    # Fixed width, so keys sort by start time (seconds since the epoch, to the microsecond).
    return f"{max(execution.started_at, 0.0):020.6f}"


def _keys(execution: Execution, parent: str) -> tuple[str, ...]:
    state, started = state_of(execution), _started(execution)
    return (
        _SEP.join(("m", execution.member, state, started, execution.id)),
        _SEP.join(("s", state, started, execution.id)),
        _SEP.join(("g", parent, started, execution.id)),
    )


def _parent(view: View, execution: Execution) -> str:
    grant = view.get(GRANTS, execution.grant)
    return grant.parent or "" if grant is not None else ""


def index_started(view: View, execution: Execution) -> None:
    """Index a newly recorded execution (its grant is recorded before it, in the same commit)."""
    for key in _keys(execution, _parent(view, execution)):
        view.put(EXECUTION_INDEX, key, b"")


def reindex(view: View, before: Execution, after: Execution) -> None:
    """Move an execution's keys from where `before` stood to where `after` stands."""
    parent = _parent(view, after)
    old, new = _keys(before, parent), _keys(after, parent)
    for key in old:
        if key not in new:
            view.delete(EXECUTION_INDEX, key)
    for key in new:
        if key not in old:
            view.put(EXECUTION_INDEX, key, b"")


def covers(reader: Reader) -> bool:
    """Whether the index holds every recorded execution (a home from before it did not)."""
    return reader.count(EXECUTION_INDEX) == FAMILIES * reader.count(EXECUTIONS)


def indexed(
    reader: Reader, *, member: str | None = None, state: ExecutionState | None = None, parent: str | None = None,
) -> Iterator[Execution]:
    """The executions matching every filter given (at least one), oldest first; check `covers` first."""
    if parent is not None:
        prefix = _SEP.join(("g", parent, ""))
    elif member is not None:
        prefix = _SEP.join(("m", member, state, "")) if state is not None else _SEP.join(("m", member, ""))
    elif state is not None:
        prefix = _SEP.join(("s", state, ""))
    else:
        raise ValueError("an index read names a member, a state or a parent grant")
    keys = [key for key, _ in reader.items(EXECUTION_INDEX, prefix)]
    if parent is None and member is not None and state is None:
        # A member's keys are grouped by state first: put them back in start order.
        keys.sort(key=lambda key: key.rsplit(_SEP, 2)[1:])
    for key in keys:
        execution = reader.get(EXECUTIONS, key.rsplit(_SEP, 1)[1])
        if execution is None:
            continue
        if (member is None or execution.member == member) and (state is None or state_of(execution) == state):
            yield execution
