"""The memory operations' requests and replies: a member's memory, and memory on or off for the home.

Each request is at once a facade method's signature (`rt.member(name).remember(...)`, `rt.memory.enable(...)`),
the loopback API's body and its OpenAPI schema (`resident.operations.memory`). Bounds are wide: the runtime
checks the finer rules itself (text length, visibility, activation) with its own typed errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from resident.messages.bounds import Budget, Name, Named, Note, RecallK, RecordRef, Seconds, Text, Timestamp, Unit
from resident.messages.memory import Activation, Kind, RecallHit, Scope

__all__ = [
    "MAX_REMEMBER_ITEMS",
    "MAX_REMEMBER_MANY_BODY_BYTES",
    "EnableMemory",
    "ForgetRequest",
    "Forgotten",
    "GetRequest",
    "Indexed",
    "MemberInfo",
    "Members",
    "MembersQuery",
    "MemorySwitch",
    "NoOptions",
    "RecallHits",
    "RecallRequest",
    "ReconcileRecord",
    "ReconcileRequest",
    "RememberManyRequest",
    "RememberRequest",
    "VectorsReady",
    "WaitIndexed",
    "WaitVectors",
]

# `remember_many` admits at most this many items a call (they are one transaction, one message to the writer).
MAX_REMEMBER_ITEMS = 10_000
# ... and its body holds at most this much (the CLI's `remember --jsonl` reads no more from its file).
MAX_REMEMBER_MANY_BODY_BYTES = 64 * 1024 * 1024


def _about(description: str, metavar: str | None = None) -> msgspec.Meta:
    """A field's description (its help on the command line and in /openapi.json), and its metavar there."""
    return msgspec.Meta(description=description, extra={"metavar": metavar} if metavar else {})


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class NoOptions(_Request, frozen=True):
    """An operation that takes no options."""


class EnableMemory(_Request, frozen=True):
    """Turn memory on with `provider` and `embedder` (`hash`, `local` or a loopback llama.cpp URL); without an
    embedder, the home's resident.toml `[memory] embedder` (`hash` when it names none). False if it was on so."""

    provider: Annotated[str, msgspec.Meta(max_length=100)] = "hindsight"
    embedder: Annotated[str, msgspec.Meta(max_length=2_000)] | None = None


class MemorySwitch(msgspec.Struct, frozen=True, kw_only=True):
    """What `memory enable`/`disable` did: whether anything changed, and whether memory is now on."""

    changed: bool
    enabled: bool


class WaitIndexed(_Request, frozen=True):
    """Wait until the substrate has taken in every change committed so far, and stored what it derived."""

    timeout: Seconds = 30.0


class Indexed(msgspec.Struct, frozen=True, kw_only=True):
    """Whether every committed change was indexed in time, and why not when it was not."""

    done: bool
    reason: str = ""


class VectorsReady(msgspec.Struct, frozen=True, kw_only=True):
    """Whether every memory had a vector of the current embedder in time."""

    ready: bool


class WaitVectors(_Request, frozen=True):
    """Wait until every memory has a vector of the current embedder; False if `timeout` passed first."""

    timeout: Seconds = 60.0


class _RememberText(_Request, frozen=True):
    text: Text


class RememberRequest(_RememberText, frozen=True, kw_only=True):
    """A memory for the member, durable when this answers; the receipt's `replication` is `pending` until Realm
    accepts it. `source` says where it comes from ("manual" when left out); a member session's writes come from
    its execution and may not name one."""

    scope: Annotated[Scope, _about(
        "AGENT_CORE: the member's own; AGENT_DYADIC: about one counterpart; WORLD_SHARED: for its world."
    )] = "AGENT_CORE"
    summary: Annotated[Text | None, _about("A short summary (default: the first line of the text).")] = None
    kind: Annotated[Kind, _about(
        "world: a fact; experience: what the member did or lived; observation: a belief drawn from records."
    )] = "experience"
    counterpart: Annotated[Name | None, _about("Whom an AGENT_DYADIC memory is about.", "NAME")] = None
    world: Annotated[Name | None, _about("The world of a WORLD_SHARED memory (one of the member's).", "NAME")] = None
    importance: Annotated[Unit, _about("Weight in recall, 0 to 1.")] = 0.5
    confidence: Annotated[Unit, _about("How sure the member is of it, 0 to 1.")] = 1.0
    activation: Activation | None = None
    supersedes: Annotated[
        RecordRef | None, _about("The record this one replaces (it is kept, marked superseded).", "ID")
    ] = None
    canonical: Annotated[bool, _about("Ask Realm to treat this memory as canonical.")] = False
    source: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    occurred_at: Timestamp | None = None
    cites: Annotated[tuple[RecordRef, ...], msgspec.Meta(max_length=100)] = ()
    timeout: Seconds | None = None


class _RememberItems(_Request, frozen=True):
    # Each item is a mapping of `remember`'s fields, checked one by one so a bad item is refused in its place.
    items: Annotated[Sequence[Any], msgspec.Meta(max_length=MAX_REMEMBER_ITEMS)]


class RememberManyRequest(_RememberItems, frozen=True, kw_only=True):
    """Many memories at once, each a mapping of `remember`'s fields (`text`, and any of its options). Valid items
    become durable together, in one commit; one outcome per item, in order: its receipt, or the error that
    refused it (the other items are written all the same)."""

    timeout: Seconds | None = None


class _RecallQuery(_Request, frozen=True):
    query: Text
    k: Annotated[RecallK, _about("At most this many results.")] = 10


class RecallRequest(_RecallQuery, frozen=True, kw_only=True):
    """The member's best-matching served memories: at most `k`, within `char_budget` characters."""

    activation: Activation | None = None
    char_budget: Annotated[
        Budget, _about("At most this many characters of memory text in all results together.")
    ] = 8_000
    include_inactive: bool = False
    timeout: Seconds | None = None


class RecallHits(msgspec.Struct, frozen=True, kw_only=True):
    """Recall's hits, best first."""

    hits: tuple[RecallHit, ...]


class _RecordNamed(_Request, frozen=True):
    record_id: RecordRef


class GetRequest(_RecordNamed, frozen=True, kw_only=True):
    """One record by id, as the member sees it; `RecordWithheld` (with state and reason) if Realm withheld it."""

    timeout: Seconds | None = None


class ForgetRequest(_RecordNamed, frozen=True, kw_only=True):
    """Retract a record: it stays stored, marked retracted, and is no longer recalled."""

    reason: Annotated[Note, _about("Why it is retracted (kept with the event).")] = ""
    timeout: Seconds | None = None


class Forgotten(msgspec.Struct, frozen=True, kw_only=True):
    """The record retracted."""

    id: str
    lifecycle: Literal["retracted"] = "retracted"


class ReconcileRequest(_RecordNamed, frozen=True, kw_only=True):
    """Settle a withheld (conflict/invalidated) record: `rollback` retracts the local write; `readmit` writes a
    new version (with `text` and `canonical` if given) that supersedes it, must change what Realm objected to,
    and stays withheld (`pending_review`) until Realm accepts it."""

    rollback: bool = False
    readmit: bool = False
    text: Text | None = None
    canonical: bool | None = None
    timeout: Seconds | None = None


class ReconcileRecord(_RecordNamed, frozen=True, kw_only=True):
    """Reconcile a withheld record as the member who wrote it (a member session: one of its own)."""

    rollback: bool = False
    readmit: bool = False
    text: Text | None = None
    canonical: bool | None = None


class MembersQuery(_Request, frozen=True):
    """The roster: configured and imported members, and the coordinator."""


class MemberInfo(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    role: str
    worlds: tuple[str, ...]


class Members(msgspec.Struct, frozen=True, kw_only=True):
    """The home's roster (configured and imported members) and its coordinator."""

    members: tuple[MemberInfo, ...]
    coordinator: Named
