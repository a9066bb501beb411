"""A member's `remember` done in the caller's own thread: checked and shaped there, committed by the writer.

The checks and the shaping are `resident.memory.admission.admit`, the same function the member
actor uses, so a call refused or accepted here is refused or accepted there. They read only the
roster (the member's worlds), the store (does the bank exist? the record being superseded) and the
call itself, never the member actor's state, so no hop to the member actor is needed: the caller
hands the prepared commit straight to the writer, which answers with the receipt once the commit
is durable. The substrate hears of the record from the writer before the caller does, and analyses
and indexes it off the caller's path (`resident.actors.substrate`).

`remember_many` admits every item alike and sends the valid ones as one message: they share one
commit and come back as one answer, each item with its own outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from resident.clock import Clock
from resident.config import Config
from resident.errors import InvalidInput, ResidentError
from resident.ids import new_id
from resident.memory.admission import Admission, admit
from resident.memory.requests import remember_message
from resident.messages.memory import Principal, Receipt, Remember
from resident.messages.memory_calls import MAX_REMEMBER_ITEMS, RememberRequest
from resident.messages.store import CommitEach
from resident.store.admission_reads import StoredReads
from resident.store.store import Store
from resident.supervisor import Address

if TYPE_CHECKING:
    from resident.messages.memory import Delegation

__all__ = ["MAX_BATCH", "Admissions", "Outcome"]

# Items one `remember_many` admits at most: they are one transaction, and one message to the writer.
MAX_BATCH = MAX_REMEMBER_ITEMS
# What one item of `remember_many` came to: its receipt, or the error that refused it.
Outcome = Receipt | ResidentError


class Admissions:
    """Remembers of the runtime's members, admitted in the caller's thread (blocking and awaitable)."""

    def __init__(
        self, store: Store, writer: Address, clock: Clock, config_now: Callable[[], Config],
        check_open: Callable[[], None],
    ) -> None:
        self._reads = StoredReads(store)
        self._writer = writer
        self._clock = clock
        self._config_now = config_now
        self._check_open = check_open

    def _member(self, name: str) -> Principal:
        self._check_open()
        member = self._config_now().member(name)
        return Principal(kind="member", name=member.name, worlds=member.worlds)

    def _admit(self, member: Principal, message: Remember) -> Admission:
        return admit(member, message, self._reads, record_id=new_id("mem"), now=self._clock.time())

    def remember(self, name: str, message: Remember, timeout: float | None) -> Receipt:
        """Admit `message` as member `name`'s and wait until it is durable."""
        commit = self._admit(self._member(name), message).commit
        receipt: Receipt = self._writer.ask(commit, timeout)
        return receipt

    async def aremember(self, name: str, message: Remember, timeout: float | None) -> Receipt:
        """`remember` for asyncio hosts: the event loop never blocks on the write."""
        commit = self._admit(self._member(name), message).commit
        receipt: Receipt = await self._writer.ask_async(commit, timeout)
        return receipt

    def remember_many(
        self, name: str, items: Iterable[Mapping[str, Any] | Remember], timeout: float | None,
        delegation: Delegation | None = None,
    ) -> list[Outcome]:
        """Admit every item; the valid ones become durable together. One outcome per item, in order."""
        admitted = self._admit_all(name, items, delegation)
        writes = tuple(entry.commit for entry in admitted if isinstance(entry, Admission))
        answers = self._writer.ask(CommitEach(writes=writes), timeout) if writes else []
        return _outcomes(admitted, answers)

    async def aremember_many(
        self, name: str, items: Iterable[Mapping[str, Any] | Remember], timeout: float | None,
        delegation: Delegation | None = None,
    ) -> list[Outcome]:
        admitted = self._admit_all(name, items, delegation)
        writes = tuple(entry.commit for entry in admitted if isinstance(entry, Admission))
        answers = await self._writer.ask_async(CommitEach(writes=writes), timeout) if writes else []
        return _outcomes(admitted, answers)

    def _admit_all(
        self, name: str, items: Iterable[Mapping[str, Any] | Remember], delegation: Delegation | None
    ) -> list[Admission | ResidentError]:
        member = self._member(name)
        batch = list(items)
        if len(batch) > MAX_BATCH:
            raise InvalidInput(f"remember_many takes at most {MAX_BATCH} items at once, not {len(batch)}; split them")
        admitted: list[Admission | ResidentError] = []
        for item in batch:
            try:
                message = item if isinstance(item, Remember) else remember_item(item)
                if delegation is not None:
                    message = msgspec.structs.replace(message, delegation=delegation)
                admitted.append(self._admit(member, message))
            except ResidentError as error:
                admitted.append(error)
        return admitted


def remember_item(item: Mapping[str, Any]) -> Remember:
    """One item of `remember_many`: a mapping of `Member.remember`'s fields (`text` and the options)."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"an item is a mapping of remember's fields (text, scope, ...), not {type(item).__name__}")
    fields_named = ", ".join(name for name in RememberRequest.__struct_fields__ if name != "timeout")
    if "timeout" in item:
        raise InvalidInput(f"an item has no timeout of its own (remember_many takes one); its fields: {fields_named}")
    try:
        fields = msgspec.convert(item, RememberRequest)
    except msgspec.ValidationError as error:
        raise InvalidInput(f"{error}; an item takes remember's fields: {fields_named}") from None
    return remember_message(
        fields.text, scope=fields.scope, summary=fields.summary, kind=fields.kind, counterpart=fields.counterpart,
        world=fields.world, importance=fields.importance, confidence=fields.confidence, activation=fields.activation,
        supersedes=fields.supersedes, canonical=fields.canonical, source=fields.source or "manual",
        occurred_at=fields.occurred_at, cites=fields.cites,
    )


def _outcomes(admitted: list[Admission | ResidentError], answers: list[Any]) -> list[Outcome]:
    """Each item's outcome: its refusal at admission, else what the writer answered for its commit."""
    written = iter(answers)
    return [next(written) if isinstance(entry, Admission) else entry for entry in admitted]
