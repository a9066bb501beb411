"""`rt.cognition`: one service over a member's memory, the knowledge it may see, and the bridged service.

    with Runtime.open(home) as rt:
        hits = rt.cognition.recall("deven", "deploy", k=10).hits       # memory, knowledge, the bridge: one scale
        context = rt.cognition.context("deven", "resident", "resident", "make the writer batch")
        offered = rt.cognition.capabilities()

Every runtime source is read through the very path its own operation takes, so its rules apply unchanged before
anything is answered: memory through the member's actor (visibility, engagement narrowing, fail-closed
replication states, a session's grant), verified entries through context preparation (authorization,
revalidation), knowledge pages through the member's own banks. The bridged service is asked only for the banks
`resident.cognition.reach` allows, with the query alone; its hits go to this caller and nowhere else.
Declared in `resident.operations.cognition`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from resident.cognition.fusion import Placed, place
from resident.cognition.reach import reach
from resident.cognition.retention import refusal
from resident.errors import (
    CognitionDisabled,
    CognitionUnavailable,
    InvalidInput,
    KnowledgeDisabled,
    MemoryDisabled,
    NotVisible,
)
from resident.ids import check_record_id
from resident.knowledge.visibility import Subject
from resident.memory.requests import recall_message
from resident.messages.cognition import (
    ALL_SOURCES,
    BridgedHit,
    Capabilities,
    CapabilitiesQuery,
    CognitionContext,
    CognitionContextRequest,
    CognitionHit,
    CognitionHits,
    CognitionRecall,
    CognitionSkipped,
    OfferedCall,
    OfferedReply,
    Retained,
    RetainRecords,
    Source,
    SourceInfo,
)
from resident.messages.knowledge import ContextEntry, SearchHit
from resident.messages.knowledge_calls import PageQuery
from resident.messages.memory import GetRecord, MemoryRecord, Principal, RecallHit
from resident.runtime.context import Call, Context
from resident.runtime.knowledge.banks import KNOWLEDGE_OFF, prepared_context, search
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.tables import ENGAGEMENT, KNOWLEDGE_BANKS, MEMORY_CONFIG

__all__ = ["call_offered", "capabilities", "cognition_context", "recall", "retain"]

# What a source's list holds before it is placed on the common scale.
Found = RecallHit | ContextEntry | SearchHit | BridgedHit


def recall(context: Context, call: Call, request: CognitionRecall) -> CognitionHits:
    """The member's best hits across the sources asked for, on one scale (see `resident.cognition.fusion`)."""
    context.check_open()
    member = call.caller.acting_as(request.member)
    context.config.member(member)
    query = recall_message(request.query, request.k, activation=None, char_budget=8_000).query
    sources = _sources(request.sources)
    ranked: dict[Source, Sequence[Found]] = {}
    skipped: list[CognitionSkipped] = []
    # The bridged service is asked while the runtime's own sources answer: the reply waits for the slower of the two,
    # not for both one after the other.
    bridged = (
        context.cognition.in_background(lambda: _ask(context, call, "bridge", query, request))
        if "bridge" in sources and context.cognition.on else None
    )
    for source in sources:
        if source == "bridge" and bridged is not None:
            found, reason = bridged.result()
        else:
            found, reason = _ask(context, call, source, query, request)
        if reason:
            skipped.append(CognitionSkipped(source=source, reason=reason))
        else:
            ranked[source] = found
    return CognitionHits(
        hits=tuple(_hit(placed) for placed in place(ranked, request.k)), skipped=tuple(skipped),
        bridge=context.cognition.report(),
    )


def cognition_context(context: Context, call: Call, request: CognitionContextRequest) -> CognitionContext:
    """The verified entries for the work item's project and repository, then memories about the item."""
    member = call.caller.acting_as(request.member)
    context.config.member(member)
    entries = tuple(prepared_context(
        context, _subject(call, member), request.project, request.repository, request.item, k=request.k,
    )) if context.config.knowledge.enabled else ()
    recalled = recall(context, call, CognitionRecall(
        member=member, query=request.item, k=request.k, sources=("memory", "bridge"), timeout=request.timeout,
    ))
    skipped = recalled.skipped
    if not context.config.knowledge.enabled:
        skipped = (CognitionSkipped(source="verified_entry", reason=KNOWLEDGE_OFF), *skipped)
    return CognitionContext(entries=entries, memories=recalled.hits, skipped=skipped, bridge=recalled.bridge)


def capabilities(context: Context, _call: Call, _request: CapabilitiesQuery) -> Capabilities:
    """The sources and whether each can answer now, and what the bridged service offers (asked again now)."""
    context.check_open()
    bridge = context.cognition
    offer = None
    if bridge.on:
        try:
            offer = bridge.refresh()
        except CognitionUnavailable:
            offer = None
    with context.store.reader() as reader:
        memory = reader.get(MEMORY_CONFIG, "memory")
    memory_on = memory is not None and memory.enabled
    knowledge_on = context.config.knowledge.enabled
    report = bridge.report()
    sources = (
        SourceInfo(source="memory", available=memory_on, reason="" if memory_on else MEMORY_OFF_MESSAGE),
        SourceInfo(source="verified_entry", available=knowledge_on, reason="" if knowledge_on else KNOWLEDGE_OFF),
        SourceInfo(source="knowledge_page", available=knowledge_on, reason="" if knowledge_on else KNOWLEDGE_OFF),
        SourceInfo(source="bridge", available=report.state == "ok", reason=report.reason or (
            "no bridge is configured ([cognition] provider)" if not bridge.on else "")),
    )
    return Capabilities(
        sources=sources, bridge=report, optional=offer.optional if offer is not None else (),
        endpoints=offer.endpoints if offer is not None else (),
    )


def call_offered(context: Context, call: Call, request: OfferedCall) -> OfferedReply:
    """An optional operation of the bridged service, for the bank that stands for the member alone."""
    context.check_open()
    member = call.caller.acting_as(request.member)
    context.config.member(member)
    if call.caller.session is not None:
        call.caller.session.check("recall")
    bridge = context.cognition
    if not bridge.on:
        raise CognitionDisabled("no Cognition service is bridged: set [cognition] provider in resident.toml")
    binding = context.config.cognition.own_bank(member)
    if binding is None:
        raise InvalidInput(f"no [[cognition.banks]] stands for {member} alone; add one with member = \"{member}\"")
    answer = bridge.optional(request.operation, binding, request.query)
    return OfferedReply(authority=bridge.settings.provider, operation=request.operation, bank=binding.bank,
                        answer=answer)


def retain(context: Context, _call: Call, request: RetainRecords) -> Retained:
    """Write served memories of the member to its own bank of the service (all or none; see `retention`)."""
    context.check_open()
    member = context.config.member(request.member).name
    if not context.cognition.on:
        raise CognitionDisabled("no Cognition service is bridged: set [cognition] provider in resident.toml")
    binding = context.config.cognition.own_bank(member)
    if binding is None or not binding.retain:
        raise InvalidInput(
            f"no bank of the service retains {member}'s memories: set retain = true in the [[cognition.banks]] "
            f"that has member = \"{member}\""
        )
    records: list[MemoryRecord] = [
        context.ask_member(member, GetRecord(id=check_record_id(record_id)), request.timeout)
        for record_id in dict.fromkeys(request.record_ids)
    ]
    refused = [reason for record in records if (reason := refusal(record, member))]
    if refused:
        more = f" (and {len(refused) - 1} more)" if refused[1:] else ""
        raise NotVisible(f"nothing was written: {refused[0]}{more}")
    context.cognition.retain(binding, [(record.id, record.body) for record in records], request.timeout)
    return Retained(bank=binding.bank, retained=tuple(record.id for record in records))


# -- the sources ------------------------------------------------------------------------------------


def _sources(asked: Sequence[str]) -> tuple[Source, ...]:
    unknown = [source for source in asked if source not in ALL_SOURCES]
    if unknown:
        raise InvalidInput(f"unknown source {unknown[0]!r}; use {', '.join(ALL_SOURCES)}")
    return tuple(source for source in ALL_SOURCES if source in asked)


def _ask(
    context: Context, call: Call, source: Source, query: str, request: CognitionRecall
) -> tuple[Sequence[Found], str]:
    """One source's hits, best first, or why it did not answer (a refusal of the caller is raised, not skipped)."""
    member = call.caller.acting_as(request.member)
    try:
        match source:
            case "memory":
                return _memories(context, call, member, query, request), ""
            case "verified_entry":
                return _entries(context, call, member, query, request)
            case "knowledge_page":
                return _pages(context, call, member, query, request.k)
            case "bridge":
                return _bridged(context, call, member, query, request.k)
    except MemoryDisabled:
        return (), MEMORY_OFF_MESSAGE
    except KnowledgeDisabled:
        return (), KNOWLEDGE_OFF


def _memories(context: Context, call: Call, member: str, query: str, request: CognitionRecall) -> list[RecallHit]:
    session = call.caller.session
    if session is not None:
        found: list[RecallHit] = _blocking(session.recall(query, request.k, timeout=request.timeout))
        return found
    hits: list[RecallHit] = context.ask_member(
        member, recall_message(query, request.k, activation=None, char_budget=8_000), request.timeout
    )
    return hits


def _entries(
    context: Context, call: Call, member: str, query: str, request: CognitionRecall
) -> tuple[list[ContextEntry], str]:
    if not context.config.knowledge.enabled:
        return [], KNOWLEDGE_OFF
    if request.project is None or request.repository is None:
        return [], "name project and repository to search verified entries"
    return prepared_context(
        context, _subject(call, member), request.project, request.repository, query, k=request.k
    ), ""


def _pages(context: Context, call: Call, member: str, query: str, k: int) -> tuple[list[SearchHit], str]:
    if not context.config.knowledge.enabled:
        return [], KNOWLEDGE_OFF
    if call.caller.session is not None:
        # A member session reads knowledge only through its own work's context (resident.runtime.knowledge).
        return [], "a member session reads knowledge pages only through its work's context"
    principal = Principal(kind="member", name=member)
    with context.store.reader() as reader:
        own = [bank.name for _, bank in reader.items(KNOWLEDGE_BANKS)
               if (bank.owner_kind, bank.owner) == ("member", member)]
    if not own:
        return [], f"{member} owns no knowledge bank"
    hits = [hit for bank in own
            for hit in search(context, call, PageQuery(bank=bank, query=query, k=k, principal=principal)).hits]
    # One BM25 index holds every bank's pages, so their scores compare.
    return sorted(hits, key=lambda hit: -hit.score)[:k], ""


def _bridged(context: Context, call: Call, member: str, query: str, k: int) -> tuple[list[BridgedHit], str]:
    bridge = context.cognition
    if not bridge.on:
        return [], "no bridge is configured ([cognition] provider)"
    session = call.caller.session
    if session is not None:
        session.check("recall")
    with context.store.reader() as reader:
        row = reader.get(ENGAGEMENT, member)
    scopes = tuple(session.grant.scopes) if session is not None else None
    allowed = reach(context.config.cognition, member, context.config.member(member).worlds,
                    row.state if row is not None else None, scopes)
    if not allowed.banks:
        return [], allowed.reason
    answer = bridge.recall(allowed.banks, query, k)
    if answer.report.state != "ok" and not answer.hits:
        return [], f"the bridge is degraded: {answer.report.reason}"
    return list(answer.hits), ""


def _subject(call: Call, member: str) -> Subject:
    """Who reads verified entries: the member, held to its work's repository when a session asks."""
    session = call.caller.session
    if session is None:
        return Subject(member=member)
    work = session.execution.work
    return Subject(member=member, repositories=frozenset({work.repository}) if work is not None else frozenset())


def _hit(placed: Placed[Any]) -> CognitionHit:
    item, source = placed.item, placed.source
    return CognitionHit(
        source=source, score=placed.score, rank=placed.rank,
        memory=item if source == "memory" else None, entry=item if source == "verified_entry" else None,
        page=item if source == "knowledge_page" else None, bridged=item if source == "bridge" else None,
    )


def _blocking(awaitable: Any) -> Any:
    # A session's callbacks are awaitable; a blocking caller runs one on a loop of its own.
    return asyncio.run(awaitable)


