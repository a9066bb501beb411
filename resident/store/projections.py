"""How each event changes state: a check (may refuse, or say "already so") and an apply.

The writer runs `project()` for every event inside the commit's transaction, so the state change
and its event are written together or not at all; replaying the event log through the same
functions rebuilds the state exactly. Checks raise a typed `ResidentError` to refuse one write
without failing the others in its batch, and return False when the event would change nothing
(enabling an enabled memory, creating an existing bank), in which case no event is appended.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from resident.errors import InvalidInput, MemoryDisabled, RecordNotFound, UnknownBank
from resident.messages.base import Event
from resident.messages.members import MemberEntry
from resident.messages.memory import (
    BankCreated,
    MemberImported,
    MemoryConfig,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
    RecordRetracted,
    RecordsRecalled,
    RecordSuperseded,
    VectorsFilled,
)
from resident.store.tables import BANKS, MEMBERS, MEMORY_CONFIG, RECORDS
from resident.store.view import View

__all__ = ["MEMORY_OFF_MESSAGE", "project", "projection"]

E = TypeVar("E", bound=Event)
Check = Callable[[View, Any], bool]
Apply = Callable[[View, Any], None]

_PROJECTIONS: dict[type[Event], tuple[Check | None, Apply]] = {}

MEMORY_OFF_MESSAGE = (
    "memory is off for this home and nothing was stored; enable it with `resident memory enable`"
)


def projection(event_type: type[E], check: Callable[[View, E], bool] | None = None) -> Callable[
    [Callable[[View, E], None]], Callable[[View, E], None]
]:
    """Register `apply` (the decorated function) and an optional `check` for one event type."""

    def register(apply: Callable[[View, E], None]) -> Callable[[View, E], None]:
        _PROJECTIONS[event_type] = (check, apply)
        return apply

    return register


def project(view: View, event: Event) -> bool:
    """Apply `event` to `view` if its check allows; False when the event would change nothing."""
    try:
        check, apply = _PROJECTIONS[type(event)]
    except KeyError:
        raise TypeError(f"no projection is registered for {type(event).__name__}") from None
    if check is not None and not check(view, event):
        return False
    apply(view, event)
    return True


# -- memory configuration ------------------------------------------------------------------------


def _memory(view: View) -> MemoryConfig:
    return view.get(MEMORY_CONFIG, "memory") or MemoryConfig()


def _switching_on_changes(view: View, event: MemorySwitchedOn) -> bool:
    config = _memory(view)
    return not (config.enabled and config.provider == event.provider and config.embedder == event.embedder)


@projection(MemorySwitchedOn, check=_switching_on_changes)
def _switch_on(view: View, event: MemorySwitchedOn) -> None:
    view.put(
        MEMORY_CONFIG,
        "memory",
        MemoryConfig(enabled=True, provider=event.provider, embedder=event.embedder, changed_at=event.at),
    )


@projection(MemorySwitchedOff, check=lambda view, _event: _memory(view).enabled)
def _switch_off(view: View, event: MemorySwitchedOff) -> None:
    config = msgspec.structs.replace(_memory(view), enabled=False, changed_at=event.at)
    view.put(MEMORY_CONFIG, "memory", config)


# -- banks and records ---------------------------------------------------------------------------


@projection(BankCreated, check=lambda view, event: view.get(BANKS, event.bank.name) is None)
def _create_bank(view: View, event: BankCreated) -> None:
    view.put(BANKS, event.bank.name, event.bank)


def _admissible(view: View, event: RecordAdmitted) -> bool:
    if not _memory(view).enabled:
        raise MemoryDisabled(MEMORY_OFF_MESSAGE)
    record = event.record
    if view.get(BANKS, record.bank) is None:
        raise UnknownBank(f"bank {record.bank} does not exist; create it first")
    if view.get(RECORDS, record.id) is not None:
        raise InvalidInput(f"a record with id {record.id} already exists")
    return True


@projection(RecordAdmitted, check=_admissible)
def _admit(view: View, event: RecordAdmitted) -> None:
    view.put(RECORDS, event.record.id, event.record)


def _existing(view: View, record_id: str) -> Any:
    record = view.get(RECORDS, record_id)
    if record is None:
        raise RecordNotFound(f"no memory record {record_id}")
    return record


def _supersedable(view: View, event: RecordSuperseded) -> bool:
    record = _existing(view, event.id)
    if record.lifecycle != "active":
        raise InvalidInput(f"record {event.id} is already {record.lifecycle}; supersede its active version")
    return True


@projection(RecordSuperseded, check=_supersedable)
def _supersede(view: View, event: RecordSuperseded) -> None:
    record = _existing(view, event.id)
    superseded = msgspec.structs.replace(record, lifecycle="superseded", superseded_by=event.by)
    view.put(RECORDS, event.id, superseded)


@projection(RecordRetracted, check=lambda view, event: _existing(view, event.id).lifecycle != "retracted")
def _retract(view: View, event: RecordRetracted) -> None:
    record = _existing(view, event.id)
    view.put(RECORDS, event.id, msgspec.structs.replace(record, lifecycle="retracted", retracted_at=event.at))


@projection(RecordsRecalled)
def _recalled(view: View, event: RecordsRecalled) -> None:
    for record_id in event.ids:
        record = view.get(RECORDS, record_id)
        if record is not None:
            used = msgspec.structs.replace(
                record, recall_count=record.recall_count + 1, last_recalled_at=event.at
            )
            view.put(RECORDS, record_id, used)


@projection(VectorsFilled)
def _vectors_filled(view: View, event: VectorsFilled) -> None:
    # Vectors live in the derived `vectors` table, written beside this event; no state changes.
    del view, event


@projection(MemberImported)
def _member_imported(view: View, event: MemberImported) -> None:
    existing = view.get(MEMBERS, event.member)
    worlds = tuple(existing.worlds) if existing is not None else ()
    if event.world is not None and event.world not in worlds:
        worlds = (*worlds, event.world)
    view.put(MEMBERS, event.member, MemberEntry(name=event.member, worlds=worlds, joined_at=event.at))
