"""How each event changes state: a check (may refuse, or say "already so") and an apply.

The writer runs `project()` for every event inside the commit's transaction, so the state change
and its event are written together or not at all; replaying the event log through the same
functions rebuilds the state exactly. Checks raise a typed `ResidentError` to refuse one write
without failing the others in its batch, and return False when the event would change nothing
(enabling an enabled memory, creating an existing bank), in which case no event is appended.
"""

from __future__ import annotations

from typing import Any

import msgspec

from resident.errors import (
    EntryNotFound,
    ExecutionSettled,
    InvalidInput,
    MemoryDisabled,
    PromotionRefused,
    RecordNotFound,
    StateChanged,
    UnknownBank,
    UnknownExecution,
)
from resident.messages.coordination import (
    CorrectionRecorded,
    Execution,
    ExecutionAccepted,
    ExecutionFinished,
    ExecutionRejected,
    ExecutionStarted,
    GrantIssued,
    GrantTokenIssued,
)
from resident.messages.knowledge import (
    ENTRY_TRANSITIONS,
    DigestRef,
    EntryImported,
    EntryProposed,
    EntryRevalidated,
    EntryStaled,
    EntryState,
    EntrySuperseded,
    EntryVerified,
    KnowledgeBankCreated,
    KnowledgeEntry,
    Page,
    PageAdmitted,
    PageSuperseded,
    RepositoryRegistered,
    SourceIngested,
)
from resident.messages.members import MemberEntry
from resident.messages.memory import (
    RECORD_TRANSITIONS,
    VERDICT_APPLIES_TO,
    BankCreated,
    MemberImported,
    MemoryConfig,
    MemoryRecord,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
    RecordRetracted,
    RecordsRecalled,
    RecordSuperseded,
    ReplicationState,
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
from resident.store.execution_index import index_record, index_started, mark_records_covered, reindex
from resident.store.projecting import projection
from resident.store.tables import (
    BANKS,
    CORRECTIONS,
    EXECUTIONS,
    GRANT_TOKENS,
    GRANTS,
    INDEXED_KEY,
    KNOWLEDGE_BANKS,
    KNOWLEDGE_ENTRIES,
    KNOWLEDGE_REPOSITORIES,
    MEMBERS,
    MEMORY_CONFIG,
    PAGE_DIGESTS,
    PAGE_SOURCES,
    PAGES,
    PENDING,
    REALM_CURSOR,
    REALM_INVALIDATIONS,
    RECORDS,
    REFUSED,
    REPLICATION,
)
from resident.store.view import View

__all__ = ["MEMORY_OFF_MESSAGE", "page_key"]

# One message for writes and reads alike: a recall refused while memory is off stored nothing either,
# and saying so would suggest it tried to.
MEMORY_OFF_MESSAGE = (
    "memory is off for this home: nothing is stored or recalled until you turn it on with `resident memory enable`"
)


# -- memory configuration ------------------------------------------------------------------------


def _memory(view: View) -> MemoryConfig:
    return view.get(MEMORY_CONFIG, "memory") or MemoryConfig()


def _switching_on_changes(view: View, event: MemorySwitchedOn) -> bool:
    config = _memory(view)
    return not (config.enabled and config.provider == event.provider and config.embedder == event.embedder)


@projection(MemorySwitchedOn, check=_switching_on_changes)
def _switch_on(view: View, event: MemorySwitchedOn) -> None:
    if view.get(MEMORY_CONFIG, "memory") is None:
        # Memory switched on for the first time: no record can exist before it, and every record
        # admitted from now on is indexed by its own event, so replication's index covers the home
        # and no start ever has to walk its records to build it.
        view.put(REALM_CURSOR, INDEXED_KEY, RealmCursor(seq=1))
        mark_records_covered(view)
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


def _require_memory(view: View) -> None:
    # Checked in the transaction too: a disable that lands between a member's check and its
    # write still wins, so nothing changes in memory after it is turned off.
    if not _memory(view).enabled:
        raise MemoryDisabled(MEMORY_OFF_MESSAGE)


def _admissible(view: View, event: RecordAdmitted) -> bool:
    _require_memory(view)
    record = event.record
    if view.get(BANKS, record.bank) is None:
        raise UnknownBank(f"bank {record.bank} does not exist; create it first")
    return True


@projection(RecordAdmitted, check=_admissible)
def _admit(view: View, event: RecordAdmitted) -> None:
    # The duplicate check is the insert itself: admission is the hottest write, and a separate
    # lookup would cost a second descent of the records table for every record.
    if not view.insert(RECORDS, event.record.id, event.record):
        raise InvalidInput(f"a record with id {event.record.id} already exists")
    heard = view.get(REALM_INVALIDATIONS, event.record.id)
    if heard is not None:
        # Realm invalidated this id before it arrived here (an import of another home's export): withheld at once.
        withheld = msgspec.structs.replace(
            event.record, replication="invalidated", replication_reason=heard.reason, replication_rule="invalidated"
        )
        view.put(RECORDS, withheld.id, withheld)
        _index_replication(view, withheld, event.at)
        index_record(view, withheld)
        return
    _index_replication(view, event.record, event.at)
    index_record(view, event.record)


def _existing(view: View, record_id: str) -> Any:
    record = view.get(RECORDS, record_id)
    if record is None:
        raise RecordNotFound(f"no memory record {record_id}")
    return record


def _supersedable(view: View, event: RecordSuperseded) -> bool:
    _require_memory(view)
    record = _existing(view, event.id)
    if "superseded" not in RECORD_TRANSITIONS[record.lifecycle]:
        raise InvalidInput(f"record {event.id} is already {record.lifecycle}; supersede its active version")
    return True


@projection(RecordSuperseded, check=_supersedable)
def _supersede(view: View, event: RecordSuperseded) -> None:
    record = _existing(view, event.id)
    superseded = msgspec.structs.replace(record, lifecycle="superseded", superseded_by=event.by)
    view.put(RECORDS, event.id, superseded)


def _retractable(view: View, event: RecordRetracted) -> bool:
    _require_memory(view)
    record = _existing(view, event.id)
    if event.only_if_active and record.lifecycle != "active":
        raise InvalidInput(f"record {event.id} was already reconciled ({record.lifecycle})")
    return "retracted" in RECORD_TRANSITIONS[record.lifecycle]


@projection(RecordRetracted, check=_retractable)
def _retract(view: View, event: RecordRetracted) -> None:
    record = _existing(view, event.id)
    retracted = msgspec.structs.replace(
        record, lifecycle="retracted", retracted_at=event.at, retracted_by=event.by, retraction_reason=event.reason
    )
    view.put(RECORDS, event.id, retracted)


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
    entry = MemberEntry(name=event.member, worlds=worlds, joined_at=event.at, role=event.role)
    view.put(MEMBERS, event.member, entry)


# -- replication to Realm ------------------------------------------------------------------------
#
# Realm's first verdict on a record stands: only a record awaiting it (`pending`, or `pending_review`
# for a version that supersedes a withheld one) becomes `synced` or `conflict`, and an invalidation
# applies once, to a record Realm accepted (locally still awaiting the verdict when the process died
# before writing the acceptance down, else `synced`). An event that would change nothing is
# not appended, so it is not published either (the substrate would otherwise mark its index copy of
# an invalidated record `synced`).


def _is(view: View, record_id: str, states: frozenset[ReplicationState]) -> bool:
    record = view.get(RECORDS, record_id)
    return record is not None and record.replication in states


def _index_replication(view: View, record: MemoryRecord, at: float) -> None:
    """Keep replication's indexes in step with `record`'s state (written beside the change itself)."""
    match record.replication:
        case "pending" | "pending_review":
            view.put(PENDING, record.id, AwaitingRealm(state=record.replication, since=at))
        case "conflict" | "invalidated":
            view.delete(PENDING, record.id)
            view.put(REFUSED, record.id, RealmRefusal(state=record.replication, at=at))
        case "synced":
            view.delete(PENDING, record.id)


@projection(ReplicationAttempted)
def _attempted(view: View, event: ReplicationAttempted) -> None:
    for record_id in event.ids:
        if view.get(RECORDS, record_id) is None:
            continue
        status = view.get(REPLICATION, record_id) or ReplicationStatus(id=record_id)
        view.put(
            REPLICATION,
            record_id,
            msgspec.structs.replace(
                status, attempts=status.attempts + 1, last_error=event.error, last_attempt_at=event.at
            ),
        )


@projection(
    RecordsSynced, check=lambda view, event: any(_is(view, i, VERDICT_APPLIES_TO["synced"]) for i in event.ids)
)
def _synced(view: View, event: RecordsSynced) -> None:
    for record_id in event.ids:
        record = view.get(RECORDS, record_id)
        if record is not None and record.replication in VERDICT_APPLIES_TO["synced"]:
            synced = msgspec.structs.replace(record, replication="synced", replication_reason="")
            view.put(RECORDS, record_id, synced)
            _index_replication(view, synced, event.at)


@projection(RecordsRestored)
def _restored(view: View, event: RecordsRestored) -> None:
    for record_id in event.ids:
        record = view.get(RECORDS, record_id)
        if record is not None and record.replication in VERDICT_APPLIES_TO["restored"]:
            again = msgspec.structs.replace(record, replication="pending", replication_reason="")
            view.put(RECORDS, record_id, again)
            _index_replication(view, again, event.at)


@projection(RecordConflicted, check=lambda view, event: _is(view, event.id, VERDICT_APPLIES_TO["conflict"]))
def _conflicted(view: View, event: RecordConflicted) -> None:
    record = _existing(view, event.id)
    changed = msgspec.structs.replace(
        record, replication="conflict", replication_reason=event.reason, replication_rule=event.rule
    )
    view.put(RECORDS, event.id, changed)
    _index_replication(view, changed, event.at)


@projection(
    RecordInvalidated, check=lambda view, event: _is(view, event.id, VERDICT_APPLIES_TO["invalidated"])
)
def _invalidated(view: View, event: RecordInvalidated) -> None:
    record = _existing(view, event.id)
    changed = msgspec.structs.replace(
        record, replication="invalidated", replication_reason=event.reason, replication_rule="invalidated"
    )
    view.put(RECORDS, event.id, changed)
    _index_replication(view, changed, event.at)


def _not_noted_yet(view: View, event: InvalidationNoted) -> bool:
    return view.get(REALM_INVALIDATIONS, event.id) is None


@projection(InvalidationNoted, check=_not_noted_yet)
def _invalidation_noted(view: View, event: InvalidationNoted) -> None:
    heard = HeardInvalidation(reason=event.reason, realm_seq=event.realm_seq, at=event.at)
    view.put(REALM_INVALIDATIONS, event.id, heard)


@projection(
    InvalidationCursorAdvanced,
    check=lambda view, event: event.seq > (view.get(REALM_CURSOR, "cursor") or RealmCursor()).seq,
)
def _cursor(view: View, event: InvalidationCursorAdvanced) -> None:
    view.put(REALM_CURSOR, "cursor", RealmCursor(seq=event.seq))


@projection(PendingIndexBuilt)
def _pending_indexed(view: View, event: PendingIndexBuilt) -> None:
    for record_id in (*event.awaiting, *event.refused):
        record = view.get(RECORDS, record_id)
        if record is not None:
            _index_replication(view, record, event.at)
    if event.complete:
        view.put(REALM_CURSOR, INDEXED_KEY, RealmCursor(seq=1))


# -- coordination --------------------------------------------------------------------------------


def _new_grant(view: View, event: GrantIssued) -> bool:
    if view.get(GRANTS, event.grant.id) is not None:
        raise InvalidInput(f"a grant with id {event.grant.id} already exists")
    return True


@projection(GrantIssued, check=_new_grant)
def _grant_issued(view: View, event: GrantIssued) -> None:
    view.put(GRANTS, event.grant.id, event.grant)


def _new_token(view: View, event: GrantTokenIssued) -> bool:
    if view.get(GRANTS, event.token.grant) is None:
        raise InvalidInput(f"a grant token names grant {event.token.grant}, which was never issued")
    if view.get(GRANT_TOKENS, event.token.digest) is not None:
        raise InvalidInput("that grant token was already issued; issue a new one")
    return True


@projection(GrantTokenIssued, check=_new_token)
def _grant_token_issued(view: View, event: GrantTokenIssued) -> None:
    view.put(GRANT_TOKENS, event.token.digest, event.token)


@projection(ExecutionStarted)
def _execution_started(view: View, event: ExecutionStarted) -> None:
    view.put(EXECUTIONS, event.execution.id, event.execution)
    index_started(view, event.execution)


def _execution(view: View, execution_id: str) -> Execution:
    execution = view.get(EXECUTIONS, execution_id)
    if execution is None:
        raise UnknownExecution(f"no execution {execution_id}; see `resident progress` for the recorded ones")
    return execution


def _finishable(view: View, event: ExecutionFinished) -> bool:
    execution = _execution(view, event.id)
    if execution.outcome != "running":
        raise InvalidInput(f"execution {event.id} already finished ({execution.outcome})")
    return True


@projection(ExecutionFinished, check=_finishable)
def _execution_finished(view: View, event: ExecutionFinished) -> None:
    before = _execution(view, event.id)
    finished = msgspec.structs.replace(
        before,
        outcome=event.outcome,
        finished_at=event.at,
        result_digest=event.result_digest,
        error=event.error,
        steps=event.steps,
        result=event.result,
        verdict=event.verdict,
        seal=event.seal,
    )
    view.put(EXECUTIONS, event.id, finished)
    reindex(view, before, finished)


def _unsettled(execution: Execution) -> None:
    """`ExecutionSettled` once the dispatcher accepted or rejected the step: it decides once."""
    if execution.accepted_at is not None:
        raise ExecutionSettled(f"execution {execution.id} was already accepted by {execution.accepted_by}")
    if execution.rejected_at is not None:
        raise ExecutionSettled(f"execution {execution.id} was already rejected by {execution.rejected_by}")


def _acceptable(view: View, event: ExecutionAccepted) -> bool:
    execution = _execution(view, event.id)
    if execution.outcome != "succeeded":
        raise InvalidInput(f"execution {event.id} is {execution.outcome}; only a step that succeeded can be accepted")
    _unsettled(execution)
    return True


@projection(ExecutionAccepted, check=_acceptable)
def _accepted(view: View, event: ExecutionAccepted) -> None:
    before = _execution(view, event.id)
    accepted = msgspec.structs.replace(before, accepted_at=event.at, accepted_by=event.by)
    view.put(EXECUTIONS, event.id, accepted)
    reindex(view, before, accepted)


def _rejectable(view: View, event: ExecutionRejected) -> bool:
    execution = _execution(view, event.id)
    if execution.outcome == "running":
        raise InvalidInput(f"execution {event.id} is still running; await it (`resident await {event.id}`) first")
    _unsettled(execution)
    if event.reassigned_to and view.get(EXECUTIONS, event.reassigned_to) is None:
        raise UnknownExecution(f"no execution {event.reassigned_to} to reassign {event.id} to")
    return True


@projection(ExecutionRejected, check=_rejectable)
def _rejected(view: View, event: ExecutionRejected) -> None:
    before = _execution(view, event.id)
    rejected = msgspec.structs.replace(
        before, rejected_at=event.at, rejected_by=event.by, rejection=event.reason,
        reassigned_to=event.reassigned_to,
    )
    view.put(EXECUTIONS, event.id, rejected)
    reindex(view, before, rejected)


@projection(CorrectionRecorded, check=lambda view, event: bool(_execution(view, event.correction.execution)))
def _corrected(view: View, event: CorrectionRecorded) -> None:
    correction = event.correction
    execution = _execution(view, correction.execution)
    view.put(CORRECTIONS, correction.id, correction)
    view.put(EXECUTIONS, execution.id, msgspec.structs.replace(execution, corrections=execution.corrections + 1))


# -- knowledge base ------------------------------------------------------------------------------
#
# Pages are written only by ingest: a file's pages, the pages it no longer holds and its new source
# record go in one write. The source record is compared-and-set on the digest the ingest read, and
# a page is refused if its bank already holds its content, so two ingests racing on one file or
# one text cannot both land.


def page_key(bank: str, part: str) -> str:
    """The key of a bank's source path or content digest in `page_sources` / `page_digests`."""
    return f"{bank}\0{part}"


def _new_knowledge_bank(view: View, event: KnowledgeBankCreated) -> bool:
    existing = view.get(KNOWLEDGE_BANKS, event.bank.name)
    if existing is None:
        return True
    if (existing.owner_kind, existing.owner) != (event.bank.owner_kind, event.bank.owner):
        raise InvalidInput(
            f"knowledge bank {event.bank.name} exists and belongs to {existing.owner_kind}:{existing.owner}; "
            "pick another name"
        )
    return False


@projection(KnowledgeBankCreated, check=_new_knowledge_bank)
def _knowledge_bank_created(view: View, event: KnowledgeBankCreated) -> None:
    view.put(KNOWLEDGE_BANKS, event.bank.name, event.bank)


def _page(view: View, page_id: str) -> Page:
    page = view.get(PAGES, page_id)
    if page is None:
        raise InvalidInput(f"no page {page_id}")
    return page


def _admissible_page(view: View, event: PageAdmitted) -> bool:
    page = event.page
    if view.get(KNOWLEDGE_BANKS, page.bank) is None:
        raise UnknownBank(
            f"knowledge bank {page.bank} does not exist; create it with `resident knowledge banks create`"
        )
    holder = view.get(PAGE_DIGESTS, page_key(page.bank, page.digest))
    if holder is not None and _page(view, holder.page).state == "active":
        raise StateChanged(f"bank {page.bank} gained the same text meanwhile (page {holder.page}); ingest again")
    return True


@projection(PageAdmitted, check=_admissible_page)
def _page_admitted(view: View, event: PageAdmitted) -> None:
    if not view.insert(PAGES, event.page.id, event.page):
        raise InvalidInput(f"a page with id {event.page.id} already exists")
    view.put(PAGE_DIGESTS, page_key(event.page.bank, event.page.digest), DigestRef(page=event.page.id))


@projection(PageSuperseded, check=lambda view, event: _page(view, event.id).state == "active")
def _page_superseded(view: View, event: PageSuperseded) -> None:
    page = _page(view, event.id)
    view.put(PAGES, event.id, msgspec.structs.replace(page, state="superseded", superseded_by=event.by,
                                                      superseded_at=event.at))


def _source_unchanged_since_read(view: View, event: SourceIngested) -> bool:
    source = event.source
    current = view.get(PAGE_SOURCES, page_key(source.bank, source.path))
    if (current.sha256 if current is not None else "") != event.previous:
        raise StateChanged(f"{source.path} was ingested into {source.bank} again meanwhile; ingest it again")
    return True


@projection(SourceIngested, check=_source_unchanged_since_read)
def _source_ingested(view: View, event: SourceIngested) -> None:
    view.put(PAGE_SOURCES, page_key(event.source.bank, event.source.path), event.source)


# -- verified knowledge --------------------------------------------------------------------------
#
# Every transition names the entry version it was decided on; a write whose version is no longer
# current is refused (`StateChanged`), so a decision made on a state that changed meanwhile never
# lands. Promotion also re-reads its evidence here: each execution it relied on must still carry
# the seal the gate checked, and the implementation must still be accepted.


@projection(RepositoryRegistered, check=lambda view, event: view.get(KNOWLEDGE_REPOSITORIES, event.repository.id)
            != event.repository)
def _repository_registered(view: View, event: RepositoryRegistered) -> None:
    view.put(KNOWLEDGE_REPOSITORIES, event.repository.id, event.repository)


def _entry(view: View, entry_id: str) -> KnowledgeEntry:
    entry = view.get(KNOWLEDGE_ENTRIES, entry_id)
    if entry is None:
        raise EntryNotFound(f"no knowledge entry {entry_id}")
    return entry


def _at_version(view: View, entry_id: str, version: int, *states: str) -> KnowledgeEntry:
    entry = _entry(view, entry_id)
    if entry.version != version:
        raise StateChanged(
            f"entry {entry_id} changed meanwhile (version {entry.version}, not {version}); read it again"
        )
    if entry.state not in states:
        raise StateChanged(f"entry {entry_id} is {entry.state} now, not {' or '.join(states)}")
    return entry


def _moving_to(target: EntryState) -> tuple[EntryState, ...]:
    """The states an entry may reach `target` from (the lifecycle's table)."""
    return tuple(source for source, targets in ENTRY_TRANSITIONS.items() if target in targets)


def _proposable(view: View, event: EntryProposed) -> bool:
    repository = view.get(KNOWLEDGE_REPOSITORIES, event.entry.repository)
    if repository is None or repository.project != event.entry.project:
        raise InvalidInput(
            f"repository {event.entry.repository} of project {event.entry.project} is not registered; "
            "register it with `resident knowledge repos add`"
        )
    return True


def _insert_entry(view: View, entry: KnowledgeEntry) -> None:
    if not view.insert(KNOWLEDGE_ENTRIES, entry.id, entry):
        raise InvalidInput(f"a knowledge entry with id {entry.id} already exists")


@projection(EntryProposed, check=_proposable)
def _entry_proposed(view: View, event: EntryProposed) -> None:
    _insert_entry(view, event.entry)


def _importable(view: View, event: EntryImported) -> bool:
    # Imported knowledge carries no evidence of this home: it can only ever be legacy.
    if event.entry.state != "legacy_unverified":
        raise InvalidInput(f"an imported entry is legacy_unverified, not {event.entry.state}")
    return view.get(KNOWLEDGE_ENTRIES, event.entry.id) is None


@projection(EntryImported, check=_importable)
def _entry_imported(view: View, event: EntryImported) -> None:
    _insert_entry(view, event.entry)


def _promotable(view: View, event: EntryVerified) -> bool:
    entry = _at_version(view, event.id, event.version, *_moving_to("verified"))
    if not event.evidence:
        raise PromotionRefused(f"entry {event.id} cannot be verified without evidence")
    for ref in event.evidence:
        execution = view.get(EXECUTIONS, ref.execution)
        if execution is None or execution.seal != ref.seal or execution.role != ref.role:
            raise PromotionRefused(f"the evidence of execution {ref.execution} changed since the gate read it")
    implementation = view.get(EXECUTIONS, entry.execution)
    if implementation is None or implementation.accepted_at is None:
        raise PromotionRefused(f"the implementation step {entry.execution} of entry {event.id} is not accepted")
    return True


@projection(EntryVerified, check=_promotable)
def _entry_verified(view: View, event: EntryVerified) -> None:
    entry = _entry(view, event.id)
    view.put(KNOWLEDGE_ENTRIES, event.id, msgspec.structs.replace(
        entry, state="verified", version=entry.version + 1, verified_at=event.at, changed_at=event.at,
        evidence=event.evidence,
    ))


@projection(EntryRevalidated, check=lambda view, event: bool(_at_version(view, event.id, event.version, "verified")))
def _entry_revalidated(view: View, event: EntryRevalidated) -> None:
    # Not a transition: the version stays, so a revalidation never invalidates another reader's CAS.
    view.put(KNOWLEDGE_ENTRIES, event.id, msgspec.structs.replace(_entry(view, event.id), checked_at=event.at))


@projection(EntryStaled, check=lambda view, event: bool(_at_version(view, event.id, event.version,
                                                                     *_moving_to("stale"))))
def _entry_staled(view: View, event: EntryStaled) -> None:
    entry = _entry(view, event.id)
    view.put(KNOWLEDGE_ENTRIES, event.id, msgspec.structs.replace(
        entry, state="stale", version=entry.version + 1, changed_at=event.at, reason=event.reason,
    ))


@projection(EntrySuperseded, check=lambda view, event: bool(_at_version(view, event.id, event.version,
                                                                         *_moving_to("superseded"))))
def _entry_superseded(view: View, event: EntrySuperseded) -> None:
    entry = _entry(view, event.id)
    view.put(KNOWLEDGE_ENTRIES, event.id, msgspec.structs.replace(
        entry, state="superseded", version=entry.version + 1, changed_at=event.at, superseded_by=event.by,
        reason=f"replaced by {event.by}",
    ))

