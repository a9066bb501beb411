"""The one event family: every event type the store can append, decoded by one decoder."""

from __future__ import annotations

from typing import Union

import msgspec

from resident.messages.coordination import (
    CorrectionRecorded,
    ExecutionAccepted,
    ExecutionFinished,
    ExecutionStarted,
    GrantIssued,
    GrantTokenIssued,
)
from resident.messages.knowledge import (
    EntryImported,
    EntryProposed,
    EntryRevalidated,
    EntryStaled,
    EntrySuperseded,
    EntryVerified,
    KnowledgeBankCreated,
    PageAdmitted,
    PageSuperseded,
    RepositoryRegistered,
    SourceIngested,
)
from resident.messages.memory import (
    BankCreated,
    MemberImported,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
    RecordRetracted,
    RecordsRecalled,
    RecordSuperseded,
    VectorsFilled,
)
from resident.messages.replication import (
    InvalidationCursorAdvanced,
    RecordConflicted,
    RecordInvalidated,
    RecordsSynced,
    ReplicationAttempted,
)

__all__ = ["EVENT_DECODER", "AnyEvent", "decode_event", "encode_event"]

# A Union (not `|`) so the alias is a runtime object msgspec can build a decoder from.
AnyEvent = Union[  # noqa: UP007
    MemorySwitchedOn,
    MemorySwitchedOff,
    BankCreated,
    RecordAdmitted,
    RecordSuperseded,
    RecordRetracted,
    RecordsRecalled,
    VectorsFilled,
    MemberImported,
    ReplicationAttempted,
    RecordsSynced,
    RecordConflicted,
    RecordInvalidated,
    InvalidationCursorAdvanced,
    GrantIssued,
    ExecutionStarted,
    ExecutionFinished,
    CorrectionRecorded,
    GrantTokenIssued,
    ExecutionAccepted,
    KnowledgeBankCreated,
    PageAdmitted,
    PageSuperseded,
    SourceIngested,
    RepositoryRegistered,
    EntryProposed,
    EntryImported,
    EntryVerified,
    EntryRevalidated,
    EntryStaled,
    EntrySuperseded,
]

EVENT_DECODER: msgspec.msgpack.Decoder[AnyEvent] = msgspec.msgpack.Decoder(AnyEvent)
_ENCODER = msgspec.msgpack.Encoder()


def encode_event(event: AnyEvent) -> bytes:
    return _ENCODER.encode(event)


def decode_event(data: bytes) -> AnyEvent:
    return EVENT_DECODER.decode(data)
