"""The named LMDB sub-databases of a home, and how their keys and values are encoded.

Values are msgpack-encoded `resident.messages` structs, one type per table, so a decode error
means corruption or an incompatible writer, never an ambiguity. Tables marked `derived` hold
caches that can be recomputed (embedding vectors, the keyword terms of each record's text); tables
marked `counted` are counters the writer updates in place with no event (recall usage), which a
replay leaves as they are; every other table is state that the event log rebuilds exactly.

Schema rules: adding a table, or a defaulted field to a stored struct, keeps `SCHEMA_VERSION`;
renaming or removing either, or changing what a field means, bumps it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from resident.messages.coordination import Correction, Execution, Grant, GrantToken
from resident.messages.engagement import EngagementQuestion, MemberEngagement
from resident.messages.events import AnyEvent
from resident.messages.evolution import EvolutionChange, MemberEvolution
from resident.messages.knowledge import DigestRef, KnowledgeBank, KnowledgeEntry, Page, Repository, SourceRecord
from resident.messages.members import MemberEntry
from resident.messages.memory import Bank, MemoryConfig, MemoryRecord, RecallUsage
from resident.messages.principles import Principle
from resident.messages.replication import (
    AwaitingRealm,
    HeardInvalidation,
    RealmCursor,
    RealmRefusal,
    ReplicationStatus,
)
from resident.messages.sessions import SessionRecord, SessionSource, SessionTurn
from resident.messages.skills import SkillHolding, SkillSession, TeamSkill

__all__ = [
    "BANKS",
    "CORRECTIONS",
    "ENGAGEMENT",
    "ENGAGEMENT_QUESTIONS",
    "EVENTS",
    "EVOLUTION",
    "EXECUTIONS",
    "EXECUTION_INDEX",
    "EXECUTION_RECORDS",
    "GRANTS",
    "GRANT_TOKENS",
    "INDEXED_KEY",
    "KNOWLEDGE_BANKS",
    "KNOWLEDGE_ENTRIES",
    "KNOWLEDGE_REPOSITORIES",
    "MEMBERS",
    "MEMBER_EVOLUTION",
    "MEMORY_CONFIG",
    "META",
    "PAGES",
    "PAGE_DIGESTS",
    "PAGE_SOURCES",
    "PENDING",
    "PRINCIPLES",
    "REALM_CURSOR",
    "REALM_INVALIDATIONS",
    "RECORDS",
    "REFUSED",
    "REPLICATION",
    "SCHEMA_VERSION",
    "SESSIONS",
    "SESSION_RAW",
    "SESSION_SOURCES",
    "SESSION_TURNS",
    "SKILLS",
    "SKILL_HOLDINGS",
    "SKILL_SESSIONS",
    "STATE_TABLES",
    "TABLES",
    "USAGE",
    "VECTORS",
    "Table",
]

SCHEMA_VERSION = 1

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Table(Generic[T]):
    """One named sub-database: its value type and codec."""

    name: str
    value_type: Any
    derived: bool = False
    counted: bool = False
    raw: bool = False
    _encoder: msgspec.msgpack.Encoder = field(default_factory=msgspec.msgpack.Encoder, repr=False)
    _decoder: msgspec.msgpack.Decoder[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_decoder", msgspec.msgpack.Decoder(self.value_type))

    def encode(self, value: T) -> bytes:
        if self.raw:
            if not isinstance(value, bytes | bytearray | memoryview):
                raise TypeError(f"table {self.name} stores raw bytes, not {type(value).__name__}")
            return bytes(value)
        return self._encoder.encode(value)

    def decode(self, data: bytes) -> T:
        value: T = bytes(data) if self.raw else self._decoder.decode(data)  # type: ignore[assignment]
        return value


META: Table[bytes] = Table("meta", bytes, raw=True)
EVENTS: Table[AnyEvent] = Table("events", AnyEvent)
MEMORY_CONFIG: Table[MemoryConfig] = Table("memory_config", MemoryConfig)
BANKS: Table[Bank] = Table("banks", Bank)
RECORDS: Table[MemoryRecord] = Table("records", MemoryRecord)
VECTORS: Table[bytes] = Table("vectors", bytes, derived=True, raw=True)
TERMS: Table[bytes] = Table("terms", bytes, derived=True, raw=True)
# Recall usage per record id, counted in place (`resident.store.usage`): a read grows no log.
USAGE: Table[RecallUsage] = Table("usage", RecallUsage, counted=True)
MEMBERS: Table[MemberEntry] = Table("members", MemberEntry)
REPLICATION: Table[ReplicationStatus] = Table("replication", ReplicationStatus)
REALM_CURSOR: Table[RealmCursor] = Table("realm_cursor", RealmCursor)
# Invalidations Realm sent for records this home did not hold yet, by record id (a later import is withheld).
REALM_INVALIDATIONS: Table[HeardInvalidation] = Table("realm_invalidations", HeardInvalidation)
# Replication's indexes: records awaiting Realm's verdict (by id), and those it refused or withdrew.
PENDING: Table[AwaitingRealm] = Table("pending", AwaitingRealm)
REFUSED: Table[RealmRefusal] = Table("refused", RealmRefusal)
# Under this key of REALM_CURSOR: whether the two indexes cover the records admitted before them.
INDEXED_KEY = "indexed"
GRANTS: Table[Grant] = Table("grants", Grant)
EXECUTIONS: Table[Execution] = Table("executions", Execution)
# Execution ids by member, state and parent grant, values empty (`resident.store.execution_index`).
EXECUTION_INDEX: Table[bytes] = Table("execution_index", bytes, raw=True)
# The memories written for each execution, `execution ␟ record`, values empty (the same module).
EXECUTION_RECORDS: Table[bytes] = Table("execution_records", bytes, raw=True)
CORRECTIONS: Table[Correction] = Table("corrections", Correction)
# Keyed by the token's digest: a session's token is looked up without ever being stored.
GRANT_TOKENS: Table[GrantToken] = Table("grant_tokens", GrantToken)
# Evolution (`docs/evolution.md`). Keys: skills by name; holdings `member/skill`; sessions
# `member/execution`; changes `member/version` (zero-padded, so a member's changes list in order).
SKILLS: Table[TeamSkill] = Table("skills", TeamSkill)
SKILL_HOLDINGS: Table[SkillHolding] = Table("skill_holdings", SkillHolding)
SKILL_SESSIONS: Table[SkillSession] = Table("skill_sessions", SkillSession)
MEMBER_EVOLUTION: Table[MemberEvolution] = Table("member_evolution", MemberEvolution)
EVOLUTION: Table[EvolutionChange] = Table("evolution", EvolutionChange)
PRINCIPLES: Table[Principle] = Table("principles", Principle)
ENGAGEMENT: Table[MemberEngagement] = Table("engagement", MemberEngagement)
ENGAGEMENT_QUESTIONS: Table[EngagementQuestion] = Table("engagement_questions", EngagementQuestion)
# Sessions (`docs/sessions.md`), all redacted. Keys: sessions by id; turns `session/index` and raw
# transcript bytes (zlib) `session/part`, zero-padded so a session's rows list in order; sources
# `harness/external id`, so a harness's transcript is attributed once.
SESSIONS: Table[SessionRecord] = Table("sessions", SessionRecord)
SESSION_TURNS: Table[SessionTurn] = Table("session_turns", SessionTurn)
SESSION_RAW: Table[bytes] = Table("session_raw", bytes, raw=True)
SESSION_SOURCES: Table[SessionSource] = Table("session_sources", SessionSource)

# Knowledge. Pages are keyed by id; a source by `bank NUL path` and a digest by `bank NUL digest`
# (bank names cannot hold NUL, so a bank's keys sort together and never run into another's).
KNOWLEDGE_BANKS: Table[KnowledgeBank] = Table("knowledge_banks", KnowledgeBank)
PAGES: Table[Page] = Table("pages", Page)
PAGE_SOURCES: Table[SourceRecord] = Table("page_sources", SourceRecord)
PAGE_DIGESTS: Table[DigestRef] = Table("page_digests", DigestRef)
KNOWLEDGE_REPOSITORIES: Table[Repository] = Table("knowledge_repositories", Repository)
KNOWLEDGE_ENTRIES: Table[KnowledgeEntry] = Table("knowledge_entries", KnowledgeEntry)

TABLES: tuple[Table[Any], ...] = (
    META, EVENTS, MEMORY_CONFIG, BANKS, RECORDS, VECTORS, TERMS, USAGE, MEMBERS, REPLICATION, REALM_CURSOR,
    REALM_INVALIDATIONS,
    GRANTS, EXECUTIONS, EXECUTION_INDEX, EXECUTION_RECORDS, CORRECTIONS, GRANT_TOKENS, PENDING, REFUSED,
    SKILLS, SKILL_HOLDINGS, SKILL_SESSIONS, MEMBER_EVOLUTION, EVOLUTION, PRINCIPLES, ENGAGEMENT, ENGAGEMENT_QUESTIONS,
    KNOWLEDGE_BANKS, PAGES, PAGE_SOURCES, PAGE_DIGESTS, KNOWLEDGE_REPOSITORIES, KNOWLEDGE_ENTRIES,
    SESSIONS, SESSION_TURNS, SESSION_RAW, SESSION_SOURCES,
)
# State the event log rebuilds: everything except the log itself, metadata, derived caches and counters.
STATE_TABLES: tuple[Table[Any], ...] = tuple(
    t for t in TABLES if not t.derived and not t.counted and t.name not in ("meta", "events")
)
