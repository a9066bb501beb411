"""A member actor: one Resident's front door to its memory, and the keeper of its mutable state.

A member's remember needs none of that state: callers check and shape it in their own thread
(`resident.runtime.memory.admissions`) with the same function this actor uses for the writes it makes
itself (`resident.memory.admission.admit`: a readmit, or a `Remember` sent here), and hand it to
the writer, which answers the caller once it is durable. This actor never waits for the writer
or the substrate, so its own writes do not serialise behind one another. Recall goes through
here (the member's engagement narrows it); direct reads (`get`) are answered here from a short
LMDB read, through the same visibility rules recall uses.

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
from resident.errors import InvalidInput, MemoryDisabled
from resident.ids import new_id
from resident.memory.admission import acting_principal, admit
from resident.memory.visibility import intact_record, is_served, readable_record, visible_record
from resident.messages.evolution import MemberCommand
from resident.messages.memory import (
    Delegation,
    Forget,
    GetRecord,
    MemoryRecord,
    Principal,
    Recall,
    Reconcile,
    RecordRetracted,
    Remember,
)
from resident.messages.store import Commit
from resident.store.admission_reads import StoredReads
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.store import Store
from resident.store.tables import MEMORY_CONFIG, RECORDS
from resident.store.usage import with_usage
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
        self.reads = StoredReads(store)
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
        return acting_principal(self.principal, delegation)

    def _recall(self, message: Recall) -> None:
        # The grant narrows which scopes are searched, and engagement which activations; neither widens.
        principal = self._principal(message.delegation)
        undelegated = msgspec.structs.replace(message, delegation=None)
        self.evolution.recall(undelegated, principal, self.substrate, MAX_RECALL_K)

    def _get(self, message: GetRecord) -> MemoryRecord:
        self._require_memory()
        with self.store.reader() as reader:
            record = with_usage(reader, reader.get(RECORDS, message.id))
        return readable_record(self._principal(message.delegation), message.id, record)

    def _require_memory(self) -> None:
        with self.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        if config is None or not config.enabled:
            raise MemoryDisabled(MEMORY_OFF_MESSAGE)

    def _remember(self, message: Remember, *, replacing: MemoryRecord | None = None) -> None:
        # The same checks and shaping as a caller's own thread does (`resident.memory.admission`);
        # the writer answers the caller with the receipt once the commit is durable.
        admission = admit(
            self.principal, message, self.reads, record_id=new_id("mem"), now=self.clock.time(), replacing=replacing
        )
        self.writer.tell(admission.commit, self.defer())

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
