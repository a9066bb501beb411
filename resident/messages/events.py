"""The one event family: every event type the store can append, decoded by one decoder."""

from __future__ import annotations

from typing import Union

import msgspec

from resident.messages.coordination import (
    CorrectionRecorded,
    ExecutionAccepted,
    ExecutionFinished,
    ExecutionRejected,
    ExecutionStarted,
    GrantIssued,
    GrantTokenIssued,
)
from resident.messages.engagement import EngagementQuestionAnswered, EngagementQuestionAsked, EngagementSwitched
from resident.messages.evolution import MemoryAdmissionRecorded, MemoryAdmissionRetracted
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
from resident.messages.principles import PrincipleDecided, PrincipleProposed, PrincipleReverted
from resident.messages.replication import (
    InvalidationCursorAdvanced,
    InvalidationNoted,
    PendingIndexBuilt,
    RecordConflicted,
    RecordInvalidated,
    RecordsRestored,
    RecordsSynced,
    ReplicationAttempted,
)
from resident.messages.sessions import SessionImported, SessionRecovered, SessionStarted
from resident.messages.skills import (
    ForgettingDryRun,
    NativeSkillsDeclared,
    SkillAdded,
    SkillForgotten,
    SkillGiven,
    SkillRead,
    SkillReclaimed,
    SkillRemoved,
    SkillRestored,
    SkillSessionClosed,
    SkillSessionOpened,
    SkillUseCorrected,
    SkillUsed,
)

__all__ = ["EVENT_DECODER", "AnyEvent", "decode_event", "encode_event"]

# A Union (not `|`) so the alias is a runtime object msgspec can build a decoder from.
AnyEvent = Union[  # noqa: UP007 - a Union over a tuple of types built at run time, which `|` cannot spell
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
    InvalidationNoted,
    RecordsRestored,
    PendingIndexBuilt,
    GrantIssued,
    ExecutionStarted,
    ExecutionFinished,
    CorrectionRecorded,
    GrantTokenIssued,
    SkillAdded,
    SkillGiven,
    SkillReclaimed,
    NativeSkillsDeclared,
    SkillSessionOpened,
    SkillRead,
    SkillUsed,
    SkillSessionClosed,
    SkillUseCorrected,
    SkillForgotten,
    ForgettingDryRun,
    SkillRemoved,
    SkillRestored,
    PrincipleProposed,
    PrincipleDecided,
    PrincipleReverted,
    EngagementSwitched,
    EngagementQuestionAsked,
    EngagementQuestionAnswered,
    MemoryAdmissionRecorded,
    MemoryAdmissionRetracted,
    ExecutionAccepted,
    ExecutionRejected,
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
    SessionStarted,
    SessionRecovered,
    SessionImported,
]

EVENT_DECODER: msgspec.msgpack.Decoder[AnyEvent] = msgspec.msgpack.Decoder(AnyEvent)
_ENCODER = msgspec.msgpack.Encoder()


def encode_event(event: AnyEvent) -> bytes:
    return _ENCODER.encode(event)


def decode_event(data: bytes) -> AnyEvent:
    return EVENT_DECODER.decode(data)
