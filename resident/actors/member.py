"""A member actor: one Resident's front door to its memory.

It checks what only the member can (may it write that scope? is the input sound?), shapes the
record, and hands the caller's reply on to the substrate or the writer: it never waits for them,
so its own writes do not serialise behind one another. Whether memory is on is the substrate's
check for remember and recall (it knows without a read; the writer checks again in the write
transaction) and this actor's for the rarer calls it answers itself. Direct reads (`get`) are
answered here from a short LMDB read, through the same visibility rules recall uses.

A call that carries a `Delegation` comes from the member's session working under a grant: the
runtime set it, never the caller. Such a call reads and changes only records in the grant's
scopes, and what it writes is marked `delegated` (Realm refuses a delegated canonical promotion).

A readmit of a withheld record writes a new version that must change what Realm objected to
(`resident.memory.readmit`) and stays withheld itself (`pending_review`) until Realm accepts it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from resident.actors.member_evolution import MemberEvolution
from resident.actors.substrate import MAX_RECALL_K
from resident.config import MemberConfig
from resident.errors import InvalidInput, MemoryDisabled, NotVisible
from resident.ids import new_id
from resident.memory.banks import runtime_bank
from resident.memory.readmit import check_readmit
from resident.memory.records import make_record
from resident.memory.visibility import (
    can_write,
    check_within_grant,
    intact_record,
    is_served,
    readable_record,
    visible_record,
)
from resident.messages.evolution import MemberCommand
from resident.messages.memory import (
    BankCreated,
    Delegation,
    Forget,
    GetRecord,
    MemoryRecord,
    Principal,
    Recall,
    Reconcile,
    RecordRetracted,
    RecordSuperseded,
    Remember,
    Retain,
)
from resident.messages.store import Commit
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.store import Store
from resident.store.tables import BANKS, MEMORY_CONFIG, RECORDS
from resident.supervisor import Address, ChildContext, Completed, SupervisedActor

__all__ = ["MemberActor"]


class MemberActor(SupervisedActor):
    """The supervised actor of one member."""

    def __init__(
        self,
        context: ChildContext,
        member: MemberConfig,
        store: Store,
        substrate: Address,
        writer: Address,
        *,
        library: Address,
    ) -> None:
        super().__init__(context)
        self.member = member
        self.store = store
        self.substrate = substrate
        self.writer = writer
        self.principal = Principal(kind="member", name=member.name, worlds=member.worlds)
        self._known_banks: set[str] = set()
        # The skill set and engagement (evolution); `library` is the skill library actor.
        self.evolution = MemberEvolution(self, member.name, store, writer, library)

    def setup(self) -> None:
        self.evolution.start()

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - the cause is already logged
        self.evolution.crashed()

    def handle(self, message: Any) -> Any:
        match message:
            case Remember():
                self._remember(message)
            case Recall():
                self._recall(message)
            case GetRecord():
                return self._get(message)
            case Forget():
                self._forget(message)
            case Reconcile():
                self._reconcile(message)
            case MemberCommand():
                return self.evolution.handle(message)
            case Completed():
                self.evolution.completed(message)
            case _:
                return super().handle(message)
        return None

    def _principal(self, delegation: Delegation | None) -> Principal:
        """Who the call acts as: the member, narrowed to its grant's scopes when a session calls."""
        if delegation is None:
            return self.principal
        return msgspec.structs.replace(self.principal, grant=delegation.grant, scopes=delegation.scopes)

    def _recall(self, message: Recall) -> None:
        # The grant narrows which scopes are searched, and engagement which activations; neither widens.
        principal = self._principal(message.delegation)
        undelegated = msgspec.structs.replace(message, delegation=None)
        self.evolution.recall(undelegated, principal, self.substrate, MAX_RECALL_K)

    def _get(self, message: GetRecord) -> MemoryRecord:
        self._require_memory()
        with self.store.reader() as reader:
            record = reader.get(RECORDS, message.id)
        return readable_record(self._principal(message.delegation), message.id, record)

    def _require_memory(self) -> None:
        with self.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        if config is None or not config.enabled:
            raise MemoryDisabled(MEMORY_OFF_MESSAGE)

    def _remember(self, message: Remember, *, replacing: MemoryRecord | None = None) -> None:
        now = self.clock.time()
        principal = self._principal(message.delegation)
        bank = runtime_bank(message.scope, self.member.name, counterpart=message.counterpart,
                            world=message.world, at=now)
        check_within_grant(principal, bank.scope, f"bank {bank.name}")
        if not can_write(self.principal, bank):
            raise NotVisible(
                f"{self.member.name} is not in world {message.world!r}; "
                f"its worlds are: {', '.join(self.member.worlds) or 'none'}"
            )
        record_id = new_id("mem")
        superseded = None
        if replacing is not None:
            # Reconciliation re-admits a withheld record: the only write allowed to supersede one.
            superseded = RecordSuperseded(at=now, id=replacing.id, by=record_id)
        elif message.supersedes is not None:
            with self.store.reader() as reader:
                old = readable_record(principal, message.supersedes, reader.get(RECORDS, message.supersedes))
            superseded = RecordSuperseded(at=now, id=old.id, by=record_id)
        before = () if self._bank_exists(bank.name) else (BankCreated(at=now, bank=bank),)
        record = make_record(
            record_id=record_id,
            owner=bank.owner,
            scope=bank.scope,
            bank=bank.name,
            text=message.text,
            summary=message.summary,
            kind=message.kind,
            counterpart=bank.counterpart,
            world=bank.world,
            importance=message.importance,
            importance_reason=message.importance_reason,
            confidence=message.confidence,
            activation=message.activation,
            supersedes=message.supersedes,
            canonical=message.canonical,
            delegated=message.delegation is not None,
            source=message.source,
            occurred_at=message.occurred_at,
            cites=message.cites,
            author=self.member.name,
            now=now,
        )
        if replacing is not None:
            check_readmit(replacing, record)
            record = msgspec.structs.replace(record, replication="pending_review")
        self.substrate.tell(Retain(record=record, before=before, supersedes=superseded), self.defer())

    def _bank_exists(self, name: str) -> bool:
        # Banks are never deleted, so once seen in the store a bank stays known. An unseen bank is
        # created with the write; creating it twice (a concurrent first write) is a no-op.
        if name in self._known_banks:
            return True
        with self.store.reader() as reader:
            exists = reader.get(BANKS, name) is not None
        if exists:
            self._known_banks.add(name)
        return exists

    def _withheld(self, record_id: str, principal: Principal) -> MemoryRecord:
        with self.store.reader() as reader:
            record = visible_record(principal, record_id, reader.get(RECORDS, record_id))
        if is_served(record):
            raise InvalidInput(
                f"record {record_id} is {record.replication}, not withheld; only conflict or invalidated "
                "records need reconciling"
            )
        if record.replication == "pending_review":
            raise InvalidInput(
                f"record {record_id} awaits Realm's review (pending_review); sync, and reconcile it if Realm refuses it"
            )
        # A readmit copies the withheld content into the new version: never launder an edited one.
        intact_record(record)
        if record.lifecycle != "active":
            raise InvalidInput(f"record {record_id} was already reconciled ({record.lifecycle})")
        return record

    def _reconcile(self, message: Reconcile) -> None:
        self._require_memory()
        if message.rollback == message.readmit:
            raise InvalidInput("reconcile needs exactly one of rollback or readmit")
        record = self._withheld(message.id, self._principal(message.delegation))
        now = self.clock.time()
        if message.rollback:
            reason = f"reconciled by rollback ({record.replication}: {record.replication_reason})"
            event = RecordRetracted(at=now, id=record.id, by=self.member.name, reason=reason, only_if_active=True)
            self.writer.tell(Commit(events=(event,)), self.defer())
            return
        corrected = Remember(
            text=message.text if message.text is not None else record.body,
            scope=record.scope,
            summary=record.summary if message.text is None else None,
            kind=record.kind,
            counterpart=record.counterpart,
            world=record.world,
            importance=record.importance,
            importance_reason=record.importance_reason,
            confidence=record.confidence,
            activation=record.activation,
            supersedes=record.id,
            canonical=record.canonical if message.canonical is None else message.canonical,
            source=f"reconcile:{record.id}",
            occurred_at=record.occurred_at,
            cites=record.cites,
            delegation=message.delegation,
        )
        self._remember(corrected, replacing=record)

    def _forget(self, message: Forget) -> None:
        self._require_memory()
        with self.store.reader() as reader:
            record = readable_record(self._principal(message.delegation), message.id, reader.get(RECORDS, message.id))
        event = RecordRetracted(at=self.clock.time(), id=record.id, by=self.member.name, reason=message.reason)
        self.writer.tell(Commit(events=(event,)), self.defer())
