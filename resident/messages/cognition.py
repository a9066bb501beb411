"""The cognition service's requests and replies (`rt.cognition`): one recall over a member's memory, the knowledge
it may see and, where one is configured, an independent Cognition service reached through the bridge.

Every hit says where it came from (`source`) and keeps that source's own fields (`memory`, `page`, `entry` or
`bridged`); `score` is the one scale every hit is placed on (docs/cognition.md, "One scale").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from resident.messages.bounds import Name, Named, RecallK, RecordRef, Seconds, Text
from resident.messages.knowledge import ContextEntry, SearchHit
from resident.messages.memory import RecallHit

__all__ = [
    "ALL_SOURCES", "BridgeReport", "BridgedHit", "Capabilities", "CapabilitiesQuery", "CognitionContext",
    "CognitionContextRequest", "CognitionHit", "CognitionHits", "CognitionRecall", "CognitionSkipped",
    "OfferedCall", "OfferedReply", "RetainRecords", "Retained", "Source", "SourceInfo",
]

# Where a hit comes from: the runtime's own memory, a verified knowledge entry, a knowledge page, or the bridged
# independent service (whose authority it stays under).
Source = Literal["memory", "verified_entry", "knowledge_page", "bridge"]
ALL_SOURCES: tuple[Source, ...] = ("memory", "verified_entry", "knowledge_page", "bridge")
# The bridge as the runtime sees it: none configured, answering, cut off (deadline or errors), or its breaker open.
BridgeState = Literal["off", "ok", "degraded"]
Sources = Annotated[tuple[Source, ...], msgspec.Meta(min_length=1, max_length=len(ALL_SOURCES))]


def _about(description: str, metavar: str | None = None) -> msgspec.Meta:
    return msgspec.Meta(description=description, extra={"metavar": metavar} if metavar else {})


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class BridgedHit(msgspec.Struct, frozen=True, kw_only=True):
    """One memory of the independent service, as it answered it: its id, text and scores, under its authority."""

    service: str
    bank: str
    id: str
    text: str
    kind: str | None = None
    mentioned_at: str | None = None
    occurred_start: str | None = None
    tags: tuple[str, ...] = ()
    # The service's own scores (its `final`, `semantic`, `keyword`), on its own scale.
    scores: dict[str, float] = msgspec.field(default_factory=dict)


class CognitionHit(msgspec.Struct, frozen=True, kw_only=True):
    """One hit: its source, its place on the common scale, and the source's own record of it (exactly one of
    `memory`, `entry`, `page` and `bridged` is set, the one `source` names)."""

    source: Source
    # The common scale: (C + 1) / (C + rank), 1.0 for each source's best hit (docs/cognition.md).
    score: float
    # Its rank within its own source, 1 for the best.
    rank: int
    memory: RecallHit | None = None
    entry: ContextEntry | None = None
    page: SearchHit | None = None
    bridged: BridgedHit | None = None


class CognitionSkipped(msgspec.Struct, frozen=True, kw_only=True):
    """A source asked for that did not answer this time, and why (memory off, knowledge off, no repository...)."""

    source: Source
    reason: str


class BridgeReport(msgspec.Struct, frozen=True, kw_only=True):
    """How the bridge to the independent service stands: `off` (none configured), `ok`, or `degraded` (cut off by
    its deadline, failing, or its breaker open: the runtime answers alone), with the reason."""

    provider: str
    state: BridgeState
    reason: str = ""
    url: str = ""
    version: str = ""
    # False when the service's version is one the bridge does not know: it is used through recall only.
    version_known: bool = True
    breaker: Literal["closed", "open", "half_open"] = "closed"
    # Since the runtime opened: calls that answered, failed, ran past the deadline, or were refused by the breaker.
    answered: int = 0
    failed: int = 0
    timed_out: int = 0
    refused: int = 0


class _Recall(_Request, frozen=True):
    member: Named
    query: Text
    k: Annotated[RecallK, _about("At most this many hits in all.")] = 10


class CognitionRecall(_Recall, frozen=True, kw_only=True):
    """The member's best hits across its memory, the knowledge it may see and the bridged service, each marked with
    its source and placed on one scale. Verified entries need `project` and `repository` (the member must be
    authorized for both); knowledge pages are searched in the member's own knowledge banks."""

    sources: Annotated[Sources, _about("Which sources to ask (default: all).")] = ALL_SOURCES
    project: Annotated[Named | None, _about("The project of the verified entries to search.", "ID")] = None
    repository: Annotated[Named | None, _about("The repository of the verified entries to search.", "ID")] = None
    timeout: Seconds | None = None


class CognitionHits(msgspec.Struct, frozen=True, kw_only=True):
    """Recall's hits, best first on the common scale; the sources that did not answer; the bridge's state."""

    hits: tuple[CognitionHit, ...]
    skipped: tuple[CognitionSkipped, ...] = ()
    bridge: BridgeReport


class _WorkItem(_Request, frozen=True):
    member: Named
    project: Named
    repository: Named
    item: Annotated[Text, _about("The work item: what the member is about to work on.")]


class CognitionContextRequest(_WorkItem, frozen=True, kw_only=True):
    """What a member needs for one work item: the verified entries it may use for the item's project and
    repository (each revalidated now), and its memories and the bridged service's about the item."""

    k: Annotated[RecallK, _about("At most this many entries, and this many memories.")] = 10
    timeout: Seconds | None = None


class CognitionContext(msgspec.Struct, frozen=True, kw_only=True):
    """A work item's context: verified entries, then memories (the member's and the bridged service's)."""

    entries: tuple[ContextEntry, ...]
    memories: tuple[CognitionHit, ...]
    skipped: tuple[CognitionSkipped, ...] = ()
    bridge: BridgeReport


class CapabilitiesQuery(_Request, frozen=True):
    """What the cognition service offers now: the runtime's sources and what the bridged service offers."""


class SourceInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One source of recall and whether it can answer now."""

    source: Source
    available: bool
    reason: str = ""


class Capabilities(msgspec.Struct, frozen=True, kw_only=True):
    """The sources, the bridge's state and version, and the optional operations the bridged service answers
    (`rt.cognition.call(member, name, ...)`), each under the service's own authority."""

    sources: tuple[SourceInfo, ...]
    bridge: BridgeReport
    optional: tuple[str, ...] = ()
    # Every endpoint the service listed when asked (what it offers beyond what the bridge uses is shown, not used).
    endpoints: tuple[str, ...] = ()


class _Offered(_Request, frozen=True):
    member: Named
    operation: Annotated[Name, _about("The optional operation's name, as `capabilities` lists it.")]


class OfferedCall(_Offered, frozen=True, kw_only=True):
    """An optional operation the bridged service offers (`capabilities().optional`), for the bank that stands for
    `member`; answered by the service under its own authority, refused when it does not offer it now."""

    query: Annotated[Text | None, _about("The question, for operations that take one (reflect).")] = None
    timeout: Seconds | None = None


class OfferedReply(msgspec.Struct, frozen=True, kw_only=True):
    """The bridged service's answer, as it gave it, marked with whose authority it is under."""

    authority: str
    operation: str
    bank: str
    answer: Any


class _Retain(_Request, frozen=True):
    member: Named
    record_ids: Annotated[Sequence[RecordRef], msgspec.Meta(min_length=1, max_length=1_000)]


class RetainRecords(_Retain, frozen=True, kw_only=True):
    """Write these served memories of `member` to the service's bank that stands for it alone, through the
    service's own retain (the owner's choice: `retain = true` for that bank). All of them or none: a record that
    may not go (withheld, another's, conditioned) refuses the whole call before anything is sent. The service is
    given `timeout` seconds to take them (the bridge's deadline when left out)."""

    timeout: Seconds | None = None


class Retained(msgspec.Struct, frozen=True, kw_only=True):
    """The bank written to and the records the service took."""

    bank: str
    retained: tuple[str, ...]
