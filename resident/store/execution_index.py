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

The memories a member's session wrote for an execution (source `execution:ID`, what `await` reports) are
indexed too, as `ID␟RECORD` keys of `EXECUTION_RECORDS`, put when each is admitted (its source never changes).
Memory switched on for the first time marks that index whole (`RECORDS_COVERED`): no record exists before
that, so a home whose memory was on before the index existed lacks the mark and is scanned instead.
"""

from __future__ import annotations

from collections.abc import Iterator

from resident.messages.coordination import Execution
from resident.messages.coordination_calls import ExecutionState, state_of
from resident.messages.memory import MemoryRecord
from resident.store.reader import Reader
from resident.store.tables import EXECUTION_INDEX, EXECUTION_RECORDS, EXECUTIONS, GRANTS, RECORDS
from resident.store.view import View

__all__ = [
    "FAMILIES", "RECORDS_COVERED", "covers", "index_record", "index_started", "indexed", "mark_records_covered",
    "records_of",
]

FAMILIES = 3
# The key of EXECUTION_RECORDS that says the index holds every record written for an execution.
RECORDS_COVERED = "~covered"
_SOURCE = "execution:"
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


def index_record(view: View, record: MemoryRecord) -> None:
    """Index an admitted record under the execution it was written for (if any)."""
    if record.source.startswith(_SOURCE):
        view.put(EXECUTION_RECORDS, _SEP.join((record.source[len(_SOURCE):], record.id)), b"")


def mark_records_covered(view: View) -> None:
    """Say the records index is whole (memory switched on for the first time: no record exists yet)."""
    view.put(EXECUTION_RECORDS, RECORDS_COVERED, b"")


def records_of(reader: Reader, execution_id: str) -> list[MemoryRecord]:
    """The memories written for `execution_id`, in id order: from the index where it is whole, else a scan."""
    source = _SOURCE + execution_id
    if reader.raw(EXECUTION_RECORDS, RECORDS_COVERED) is None:
        return sorted((r for _, r in reader.items(RECORDS) if r.source == source), key=lambda r: r.id)
    keys = [key for key, _ in reader.items(EXECUTION_RECORDS, execution_id + _SEP)]
    found = (reader.get(RECORDS, key.rsplit(_SEP, 1)[1]) for key in keys)
    return [record for record in found if record is not None and record.source == source]
