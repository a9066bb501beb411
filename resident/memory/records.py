"""Shaping a `remember` into a record: text limits, defaults, and the content digest.

Limits are explicit: a summary of at most `MAX_SUMMARY_CHARS`, a body of at most
`MAX_BODY_CHARS` and a recall query of at most `MAX_QUERY_CHARS`, none empty, all valid UTF-8 (a
Python `str` can still hold lone surrogates from a lenient decode; those are refused too). The
digest is the record's version identity for Realm: the same id with another digest is a conflict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from resident.errors import InvalidInput, TextInvalid
from resident.messages.digest import content_digest
from resident.messages.limits import MAX_BODY_CHARS, MAX_SUMMARY_CHARS
from resident.messages.memory import Activation, Kind, MemoryRecord, Scope

__all__ = [
    "KINDS",
    "MAX_BODY_CHARS",
    "MAX_FUTURE_SECONDS",
    "MAX_QUERY_CHARS",
    "MAX_SUMMARY_CHARS",
    "ActivationLike",
    "as_activation",
    "check_kind",
    "check_occurred_at",
    "check_time",
    "check_unit",
    "clean_query",
    "clean_text",
    "content_digest",
    "indexed_text",
    "make_record",
    "summarize",
    "utf8_text",
]

# What callers may pass as an activation condition: a struct, a mapping of its two keys, or nothing.
ActivationLike = Activation | Mapping[str, str | None] | None

MAX_QUERY_CHARS = 2_000
# How far ahead of the runtime's clock a memory may say it happened: a day covers clocks that
# disagree and time zones; beyond it the time is a mistake (milliseconds for seconds, a typo) that
# would rank the record first by recency for years.
MAX_FUTURE_SECONDS = 86_400.0
KINDS: tuple[Kind, ...] = ("world", "experience", "observation")


def utf8_text(value: str | bytes, field: str) -> str:
    """`value` as a `str` that encodes to UTF-8 (bytes are decoded strictly; lone surrogates refused)."""
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            raise TextInvalid(f"{field} is not valid UTF-8 (byte {error.start}); send UTF-8 text") from None
    if not isinstance(value, str):
        raise TextInvalid(f"{field} must be text, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise TextInvalid(f"{field} is not valid UTF-8 (character {error.start}); send UTF-8 text") from None
    return value


def as_activation(value: ActivationLike) -> Activation:
    """An `Activation` from `None`, an `Activation`, or a mapping with `domain` and/or `project`."""
    domain: str | None
    if value is None:
        return Activation()
    if isinstance(value, Activation):
        domain, project = value.domain, value.project
    elif isinstance(value, Mapping):
        unknown = sorted(set(value) - {"domain", "project"})
        if unknown:
            raise InvalidInput(f"unknown activation key {unknown[0]!r}; use domain and project")
        domain, project = value.get("domain"), value.get("project")
    else:
        raise InvalidInput("activation must be a mapping like {'domain': 'work', 'project': 'x'}")
    if domain not in (None, "work", "personal"):
        raise InvalidInput(f"activation domain must be 'work' or 'personal', not {domain!r}")
    if project is not None and (not isinstance(project, str) or not project.strip()):
        raise InvalidInput("activation project must be a non-empty name")
    return Activation(domain=domain, project=project)  # type: ignore[arg-type]


def clean_text(value: str | bytes, field: str, limit: int) -> str:
    """`value` as checked text: valid UTF-8, not blank, at most `limit` characters."""
    text = utf8_text(value, field).strip()
    if not text:
        raise TextInvalid(f"{field} is empty; give some text to remember")
    if len(text) > limit:
        raise TextInvalid(f"{field} is {len(text)} characters; the limit is {limit} — split it into several memories")
    return text


def clean_query(value: str | bytes) -> str:
    """A recall query as checked text: valid UTF-8, not blank, at most `MAX_QUERY_CHARS` characters."""
    text = utf8_text(value, "the query").strip()
    if not text:
        raise TextInvalid("the query is empty; say what to recall")
    if len(text) > MAX_QUERY_CHARS:
        raise TextInvalid(f"the query is {len(text)} characters; the limit is {MAX_QUERY_CHARS} — ask more briefly")
    return text


def summarize(body: str) -> str:
    """A summary for a body that came without one: its first line, cut at a word near 160 chars."""
    first = body.splitlines()[0].strip() if body.strip() else body
    if len(first) <= 160:
        return first
    cut = first.rfind(" ", 0, 160)
    return first[: cut if cut > 80 else 160].rstrip() + "…"


def check_unit(field: str, value: float) -> float:
    """A weight in [0, 1]."""
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value) or not 0 <= value <= 1:
        raise InvalidInput(f"{field} must be a number from 0 to 1, not {value!r}")
    return float(value)


def check_time(field: str, value: float) -> float:
    """A point in time as epoch seconds: a finite number (a NaN would unsettle time ranking)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidInput(f"{field} must be a time in seconds since the epoch, not {value!r}")
    return float(value)


def check_occurred_at(value: float, now: float) -> float:
    """When a memory happened: a time (as `check_time`) no more than `MAX_FUTURE_SECONDS` after `now`."""
    when = check_time("occurred_at", value)
    if when > now + MAX_FUTURE_SECONDS:
        raise InvalidInput(
            f"occurred_at {when:.0f} is {(when - now) / 86_400:,.1f} days after now; give the time it happened "
            "in seconds since the epoch (not milliseconds), at most a day ahead"
        )
    return when


def check_kind(kind: str) -> Kind:
    for known in KINDS:
        if kind == known:
            return known
    raise InvalidInput(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")


def make_record(
    *,
    record_id: str,
    owner: str,
    scope: Scope,
    bank: str,
    text: str | bytes,
    summary: str | bytes | None,
    kind: str,
    counterpart: str | None,
    world: str | None,
    importance: float,
    importance_reason: str,
    confidence: float,
    activation: Activation,
    supersedes: str | None,
    canonical: bool,
    delegated: bool,
    source: str,
    occurred_at: float | None,
    cites: tuple[str, ...],
    now: float,
    author: str = "",
) -> MemoryRecord:
    """A complete, checked record (everything but its vector)."""
    body = clean_text(text, "text", MAX_BODY_CHARS)
    short = clean_text(summary, "summary", MAX_SUMMARY_CHARS) if summary is not None else summarize(body)
    checked_kind = check_kind(kind)
    if checked_kind == "observation" and not cites:
        raise InvalidInput("an observation cites the records it consolidates; pass their ids in cites")
    return MemoryRecord(
        id=record_id,
        summary=short,
        body=body,
        kind=checked_kind,
        bank=bank,
        scope=scope,
        owner=owner,
        occurred_at=now if occurred_at is None else check_occurred_at(occurred_at, now),
        recorded_at=now,
        digest=content_digest(
            record_id=record_id,
            summary=short,
            body=body,
            kind=checked_kind,
            bank=bank,
            canonical=canonical,
            delegated=delegated,
            supersedes=supersedes,
        ),
        cites=cites,
        counterpart=counterpart,
        world=world,
        activation=activation,
        supersedes=supersedes,
        source=source,
        importance=check_unit("importance", importance),
        importance_reason=importance_reason,
        confidence=check_unit("confidence", confidence),
        canonical=bool(canonical),
        delegated=bool(delegated),
        author=author,
    )


def indexed_text(record: MemoryRecord) -> str:
    """What gets embedded and keyword-indexed: the summary, a newline, the body.

    A summary made from the body's first line is not repeated: it would count those words twice
    in keyword ranking, and analysing it again is a third of a rebuild's work for short memories.
    """
    # A long first line is summarised as its beginning and an ellipsis; that is in the body too.
    if record.body.startswith(record.summary.removesuffix("…")):
        return record.body
    return f"{record.summary}\n{record.body}"
