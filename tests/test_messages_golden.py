"""Golden bytes for every stored format: an accidental change to an event or record encoding fails here.

`tests/golden/messages.json` holds, for every event type and every stored record type, the
msgpack bytes (base64) of one fixed value built by `samples()` below, plus the manifest's JSON
form. The tests re-encode the same values and compare bytes (a renamed field, a changed tag or
field order shows up), decode the stored bytes and compare values (old data stays readable), and
check msgspec's evolution rules hold for every type: unknown fields are ignored, missing
defaulted fields take their defaults.

The file is written only on purpose, after a deliberate format change (and a schema decision):

    python -m tests.test_messages_golden --regenerate
"""

from __future__ import annotations

import base64
import json
import sys
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from resident.messages.backup import BACKUP_FORMAT, BackupFile, BackupManifest
from resident.messages.base import Event
from resident.messages.coordination import (
    Correction,
    CorrectionRecorded,
    Execution,
    ExecutionAccepted,
    ExecutionFinished,
    ExecutionRejected,
    ExecutionStarted,
    Grant,
    GrantIssued,
    GrantToken,
    GrantTokenIssued,
    WorkItem,
)
from resident.messages.events import EVENT_DECODER, AnyEvent
from resident.messages.knowledge import (
    Dependency,
    DigestRef,
    EntryImported,
    EntryProposed,
    EntryRevalidated,
    EntrySource,
    EntryStaled,
    EntrySuperseded,
    EntryVerified,
    EvidenceRef,
    KnowledgeBank,
    KnowledgeBankCreated,
    KnowledgeEntry,
    Page,
    PageAdmitted,
    PageSource,
    PageSuperseded,
    Repository,
    RepositoryRegistered,
    SourceIngested,
    SourceRecord,
)
from resident.messages.members import MemberEntry
from resident.messages.memory import (
    Activation,
    Bank,
    BankCreated,
    MemberImported,
    MemoryConfig,
    MemoryRecord,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecallUsage,
    RecordAdmitted,
    RecordRetracted,
    RecordsRecalled,
    RecordSuperseded,
    VectorsFilled,
)
from resident.messages.replication import (
    AwaitingRealm,
    HeardInvalidation,
    InvalidationCursorAdvanced,
    InvalidationNoted,
    PendingIndexBuilt,
    RealmCursor,
    RealmRefusal,
    RecordConflicted,
    RecordInvalidated,
    RecordsRestored,
    RecordsSynced,
    ReplicationAttempted,
    ReplicationStatus,
)
from resident.store.tables import EVENTS, TABLES
from tests.golden_evolution import evolution_samples
from tests.golden_sessions import session_samples

GOLDEN = Path(__file__).with_name("golden") / "messages.json"
AT = 1_700_000_000.25


def _record() -> MemoryRecord:
    return MemoryRecord(
        id="01HZX3K9Q0000000000000000A",
        summary="El despliegue a staging necesita la migración primero / 部署前先迁移",
        body="Run `make migrate` against staging before rolling the deployment; skipping it crash-looped the API.",
        kind="observation",
        bank="agent_core/deven",
        scope="AGENT_CORE",
        owner="deven",
        occurred_at=AT - 3600.5,
        recorded_at=AT,
        digest="9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        cites=("01HZX3K9Q0000000000000000B", "01HZX3K9Q0000000000000000C"),
        counterpart="alice",
        world="world-1",
        activation=Activation(domain="work", project="resident"),
        supersedes="01HZX3K9Q0000000000000000D",
        superseded_by="01HZX3K9Q0000000000000000E",
        retracted_at=AT + 60.0,
        source="session/7f3a",
        importance=0.75,
        importance_reason="cost an outage",
        confidence=0.875,
        lifecycle="superseded",
        recall_count=3,
        last_recalled_at=AT + 120.0,
        canonical=True,
        delegated=True,
        replication="conflict",
        replication_reason="delegated path may not promote to canonical",
        replication_rule="delegated_promotion",
    )


def _bank() -> Bank:
    return Bank(
        name="agent_dyadic/deven/alice",
        scope="AGENT_DYADIC",
        owner="deven",
        counterpart="alice",
        world="world-1",
        created_at=AT,
        created_by="app:notes",
    )


def _grant() -> Grant:
    return Grant(
        id="grant_01hzx3k9q0",
        holder="deven",
        actions=("read", "write"),
        scopes=("AGENT_CORE", "WORLD_SHARED"),
        expires_at=AT + 86_400.0,
        issued_at=AT,
        issued_by="samuel",
        parent="grant_01hzx3k9p0",
    )


def _execution() -> Execution:
    return Execution(
        id="exec_01hzx3k9q0",
        task="fix the staging deploy",
        member="deven",
        role="implement",
        grant="grant_01hzx3k9q0",
        started_at=AT,
        finished_at=AT + 600.5,
        outcome="succeeded",
        result_digest="ef" * 32,
        error="",
        steps=7,
        corrections=1,
        work=_work(),
        reviews="exec_01hzx3k9p0",
        fingerprint="1f" * 32,
        result="complete",
        verdict="approved",
        seal="2e" * 32,
        accepted_at=AT + 700.0,
        accepted_by="owner",
        dispatched_by="samuel",
        harness="pi",
        session="ses_01hzx3k9q0",
    )


def _work() -> WorkItem:
    return WorkItem(
        project="resident", repository="acme/resident", item="issue-17", tree="3d" * 20, model="claude-x",
        scope="resident/knowledge", provider="anthropic",
    )


def _knowledge_bank() -> KnowledgeBank:
    return KnowledgeBank(name="handbook", owner_kind="member", owner="deven", created_at=AT)


def _page() -> Page:
    return Page(
        id="page_01hzx3k9q0", bank="handbook", kind="markdown", title="Despliegue / 部署",
        body="Migrar primero; 先迁移再部署.", digest="4c" * 32,
        source=PageSource(path="/docs/deploy.md", sha256="6a" * 32), ordinal=2, admitted_at=AT, state="superseded",
        superseded_by="page_01hzx3k9r0", superseded_at=AT + 5.0,
    )


def _source_record() -> SourceRecord:
    return SourceRecord(bank="handbook", path="/docs/deploy.md", sha256="6a" * 32,
                        pages=("page_01hzx3k9q0", "page_01hzx3k9r0"), ingested_at=AT)


def _repository() -> Repository:
    return Repository(id="acme/resident", project="resident", path="/src/resident", members=("alice", "deven"),
                      registered_at=AT)


def _evidence() -> tuple[EvidenceRef, ...]:
    return (EvidenceRef(execution="exec_01hzx3k9q0", role="implement", seal="2e" * 32),
            EvidenceRef(execution="exec_01hzx3k9r0", role="review", seal="3e" * 32))


def _entry() -> KnowledgeEntry:
    return KnowledgeEntry(
        id="kn_01hzx3k9q00000000000000000", project="resident", repository="acme/resident", kind="decision",
        title="Un escritor por worktree", body="El coordinador conserva un único escritor activo.",
        visibility="project", owner="deven", state="verified", version=3, created_at=AT, changed_at=AT + 9.0,
        sources=(EntrySource(kind="execution", ref="exec_01hzx3k9q0", digest="1f" * 32),
                 EntrySource(kind="file", ref="resident/actors/writer.py", digest="7b" * 32)),
        dependencies=(Dependency(kind="file", ref="resident/actors/writer.py", digest="7b" * 32, generation="3d" * 20),
                      Dependency(kind="provider", ref="claude-x", generation="claude-x", provider="anthropic")),
        provider="anthropic", fingerprint="1f" * 32, execution="exec_01hzx3k9q0",
        supersedes="kn_01hzx3k9p00000000000000000", superseded_by="kn_01hzx3k9r00000000000000000",
        verified_at=AT + 8.0, checked_at=AT + 9.0, reason="replaced", evidence=_evidence(),
    )


def _grant_token() -> GrantToken:
    return GrantToken(
        digest="5e" * 32, grant="grant_01hzx3k9q0", member="deven", execution="exec_01hzx3k9q0", issued_at=AT
    )


def _correction() -> Correction:
    return Correction(id="corr_01hzx3k9q0", execution="exec_01hzx3k9q0", note="use the v2 API", by="owner", at=AT)


def samples() -> dict[str, Any]:
    """One fixed value per stored type, keyed `event/<tag>`, `record/<class>` or `json/<class>`."""
    events: list[Event] = [
        MemorySwitchedOn(at=AT, provider="hindsight", embedder="llama"),
        MemorySwitchedOff(at=AT + 1.0),
        BankCreated(at=AT, bank=_bank()),
        RecordAdmitted(at=AT, record=_record()),
        RecordSuperseded(at=AT, id="01HZX3K9Q0000000000000000D", by="01HZX3K9Q0000000000000000A"),
        RecordRetracted(at=AT, id="01HZX3K9Q0000000000000000A", by="deven", reason="it was wrong", only_if_active=True),
        RecordsRecalled(at=AT, ids=("01HZX3K9Q0000000000000000A", "01HZX3K9Q0000000000000000B")),
        VectorsFilled(at=AT, ids=("01HZX3K9Q0000000000000000A",), embedder="llama"),
        MemberImported(at=AT, member="victor", world="world-2", records=42),
        ReplicationAttempted(at=AT, ids=("01HZX3K9Q0000000000000000A",), error="connection refused"),
        RecordsSynced(at=AT, ids=("01HZX3K9Q0000000000000000A", "01HZX3K9Q0000000000000000B")),
        RecordConflicted(at=AT, id="01HZX3K9Q0000000000000000A", reason="not canonical", rule="delegated_promotion"),
        RecordInvalidated(at=AT, id="01HZX3K9Q0000000000000000A", reason="superseded upstream", realm_seq=17),
        InvalidationCursorAdvanced(at=AT, seq=18),
        InvalidationNoted(at=AT, id="mem_01j", reason="withdrawn by the owner", realm_seq=19),
        RecordsRestored(at=AT, ids=("mem_01j", "mem_01k")),
        PendingIndexBuilt(
            at=AT, awaiting=("01HZX3K9Q0000000000000000A",), refused=("01HZX3K9Q0000000000000000B",)
        ),
        GrantIssued(at=AT, grant=_grant()),
        ExecutionStarted(at=AT, execution=_execution()),
        ExecutionFinished(
            at=AT, id="exec_01hzx3k9q0", outcome="failed", result_digest="ef" * 32, error="tests failed", steps=9,
            result="partial", verdict="rejected", seal="2e" * 32,
        ),
        CorrectionRecorded(at=AT, correction=_correction()),
        GrantTokenIssued(at=AT, token=_grant_token()),
        ExecutionAccepted(at=AT, id="exec_01hzx3k9q0", by="owner"),
        ExecutionRejected(
            at=AT, id="exec_01hzx3k9q0", by="samuel", reason="the retry test still flakes",
            reassigned_to="exec_01hzx3k9r0",
        ),
        KnowledgeBankCreated(at=AT, bank=_knowledge_bank()),
        PageAdmitted(at=AT, page=_page()),
        PageSuperseded(at=AT, id="page_01hzx3k9q0", by="page_01hzx3k9r0"),
        SourceIngested(at=AT, source=_source_record(), previous="5a" * 32),
        RepositoryRegistered(at=AT, repository=_repository()),
        EntryProposed(at=AT, entry=_entry()),
        EntryImported(at=AT, entry=_entry()),
        EntryVerified(at=AT, id="kn_01hzx3k9q00000000000000000", version=1, evidence=_evidence()),
        EntryRevalidated(at=AT, id="kn_01hzx3k9q00000000000000000", version=2),
        EntryStaled(at=AT, id="kn_01hzx3k9q00000000000000000", version=2, reason="writer.py changed"),
        EntrySuperseded(at=AT, id="kn_01hzx3k9q00000000000000000", version=2, by="kn_01hzx3k9r00000000000000000"),
    ]
    evolution_events, evolution_records = evolution_samples(AT)
    events += evolution_events
    session_events, session_records = session_samples(AT)
    events += session_events
    manifest = BackupManifest(
        format=BACKUP_FORMAT,
        schema_version=1,
        created_at=AT,
        files=(
            BackupFile(path="store/data.mdb", size=24576, sha256="ab" * 32),
            BackupFile(path="resident.toml", size=120, sha256="cd" * 32),
        ),
    )
    records: list[Any] = [
        _record(),
        _bank(),
        MemoryConfig(enabled=True, provider="hindsight", embedder="llama", changed_at=AT),
        RecallUsage(count=41, last_at=AT + 60.0),
        MemberEntry(name="victor", worlds=("world-1", "world-2"), joined_at=AT, role="trader"),
        ReplicationStatus(id="01HZX3K9Q0000000000000000A", attempts=4, last_error="timeout", last_attempt_at=AT),
        RealmCursor(seq=18),
        HeardInvalidation(reason="withdrawn by the owner", realm_seq=19, at=AT),
        AwaitingRealm(state="pending_review", since=AT),
        RealmRefusal(state="invalidated", at=AT),
        _grant(),
        _execution(),
        _correction(),
        _grant_token(),
        *evolution_records,
        *session_records,
        manifest,
        _knowledge_bank(),
        _page(),
        _source_record(),
        DigestRef(page="page_01hzx3k9q0"),
        _repository(),
        _entry(),
    ]
    found: dict[str, Any] = {f"event/{type(event).__struct_config__.tag}": event for event in events}
    found.update({f"record/{type(value).__name__}": value for value in records})
    found["json/BackupManifest"] = manifest
    return found


def encode(key: str, value: Any) -> bytes:
    if key.startswith("json/"):
        return msgspec.json.encode(value)
    return msgspec.msgpack.encode(value)


def decode(key: str, data: bytes, value_type: type) -> Any:
    if key.startswith("json/"):
        return msgspec.json.decode(data, type=value_type)
    if key.startswith("event/"):
        # Through the family's one decoder, so the tag dispatch is part of what is checked.
        return EVENT_DECODER.decode(data)
    return msgspec.msgpack.decode(data, type=value_type)


def regenerate() -> None:
    encoded = {key: base64.b64encode(encode(key, value)).decode("ascii") for key, value in sorted(samples().items())}
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(encoded, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _golden() -> dict[str, bytes]:
    raw = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return {key: base64.b64decode(value) for key, value in raw.items()}


SAMPLES = samples()


# -- coverage ------------------------------------------------------------------------------------


def test_every_event_type_has_a_sample() -> None:
    tags = {f"event/{member.__struct_config__.tag}" for member in typing.get_args(AnyEvent)}
    assert tags == {key for key in SAMPLES if key.startswith("event/")}


def test_every_stored_record_type_has_a_sample() -> None:
    stored = {table.value_type for table in TABLES if not table.raw and table is not EVENTS}
    stored.add(BackupManifest)
    assert {f"record/{value_type.__name__}" for value_type in stored} == {
        key for key in SAMPLES if key.startswith("record/")
    }


def test_the_golden_file_holds_exactly_the_samples() -> None:
    assert sorted(_golden()) == sorted(SAMPLES)


# -- bytes and values ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_encoding_is_byte_for_byte_the_golden_sample(key: str) -> None:
    assert encode(key, SAMPLES[key]) == _golden()[key], (
        f"the stored format of {key} changed; if that is deliberate, decide on SCHEMA_VERSION and "
        "run `python -m tests.test_messages_golden --regenerate`"
    )


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_the_golden_sample_decodes_to_the_value(key: str) -> None:
    value = SAMPLES[key]
    assert decode(key, _golden()[key], type(value)) == value


# -- evolution -----------------------------------------------------------------------------------


def _fields(key: str) -> dict[str, Any]:
    data = _golden()[key]
    raw = msgspec.json.decode(data) if key.startswith("json/") else msgspec.msgpack.decode(data)
    assert isinstance(raw, dict)
    return raw


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_an_unknown_field_from_a_newer_writer_is_ignored(key: str) -> None:
    raw = _fields(key)
    raw["added_by_a_newer_version"] = {"nested": [1, 2, 3]}
    value = SAMPLES[key]
    assert decode(key, encode(key, raw), type(value)) == value


def _defaulted(value: Any) -> list[msgspec.structs.FieldInfo]:
    return [
        field
        for field in msgspec.structs.fields(type(value))
        if field.default is not msgspec.NODEFAULT or field.default_factory is not msgspec.NODEFAULT
    ]


@pytest.mark.parametrize("key", sorted(key for key in SAMPLES if _defaulted(SAMPLES[key])))
def test_a_missing_defaulted_field_decodes_as_its_default(key: str) -> None:
    value = SAMPLES[key]
    for field in _defaulted(value):
        raw = _fields(key)
        del raw[field.encode_name]
        default = field.default if field.default is not msgspec.NODEFAULT else field.default_factory()
        decoded = decode(key, encode(key, raw), type(value))
        assert decoded == msgspec.structs.replace(value, **{field.name: default}), field.name


def test_a_missing_required_field_is_refused() -> None:
    raw = _fields("record/MemoryRecord")
    del raw["body"]
    with pytest.raises(msgspec.ValidationError, match="body"):
        msgspec.msgpack.decode(msgspec.msgpack.encode(raw), type=MemoryRecord)


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        raise SystemExit("usage: python -m tests.test_messages_golden --regenerate")
    regenerate()
    print(f"wrote {GOLDEN}")
