"""Sessions: a member at work in a harness, and the transcript recovered when it ends.

A session is one run of a harness (Claude Code, Codex, pi, or any command) for one member, started
through the runtime (`origin="started"`, tied to the execution it works on) or attributed later by
the owner from a harness's history (`origin="imported"`). What it recovers is the member's
*experience*: it lives in the member's `AGENT_CORE`, is visible to that member (and the owner)
only, and becomes memory only through curation. Everything stored here was redacted first.

A recovered transcript is kept twice, both redacted: the raw bytes of each file it came from
(compressed, `TranscriptPart` describes each) and the normalized turns (`SessionTurn`), ordered by
the format's parent links where it has them. The events carry both, so the state rebuilds from
the log like every other table.
"""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Event, Record

__all__ = [
    "HARNESSES",
    "ExcerptKind",
    "Harness",
    "RecoveredTranscript",
    "SessionCandidate",
    "SessionExcerpt",
    "SessionImported",
    "SessionOrigin",
    "SessionProgress",
    "SessionRecord",
    "SessionRecovered",
    "SessionSource",
    "SessionStarted",
    "SessionState",
    "SessionTurn",
    "TranscriptPart",
    "TurnKind",
    "TurnRole",
]

Harness = Literal["claude-code", "codex", "pi", "command"]
HARNESSES: tuple[Harness, ...] = ("claude-code", "codex", "pi", "command")
SessionOrigin = Literal["started", "imported"]
SessionState = Literal["running", "recovered"]
TurnRole = Literal["user", "assistant", "tool", "system", "summary", "other"]
# `raw` is a line of a type the parser does not know, kept as it was (bounded); `unparsed` a line
# that is not JSON at all.
TurnKind = Literal["text", "thinking", "tool_call", "tool_result", "summary", "raw", "unparsed"]


class SessionTurn(Record, frozen=True):
    """One normalized turn of a recovered transcript (redacted, bounded).

    `node` and `parent` are the format's own entry ids where it has them (Claude Code's `uuid` /
    `parentUuid`, pi's `id` / `parentId`); `branch` marks a turn off the conversation's final path
    (an abandoned branch, a side chain). `part` is the transcript file it came from.
    """

    index: int
    part: int
    role: TurnRole
    kind: TurnKind
    text: str
    tool: str = ""
    call: str = ""
    node: str = ""
    parent: str = ""
    branch: bool = False
    at: float | None = None
    truncated: bool = False


class TranscriptPart(Record, frozen=True):
    """One transcript file recovered into a session: where it was, what it said of itself, its size.

    `offset` is where reading started: a file that existed before the session and grew during it
    (a resumed conversation) is recovered from the length it had. `size` counts the bytes read,
    `stored` the compressed, redacted bytes kept; `digest` is the SHA-256 of the redacted bytes.
    """

    index: int
    source: str
    external_id: str = ""
    title: str = ""
    cwd: str = ""
    started_at: float | None = None
    forked_from: str = ""
    offset: int = 0
    size: int = 0
    stored: int = 0
    digest: str = ""
    lines: int = 0
    turns: int = 0
    unparsed: int = 0
    truncated: bool = False
    # What the harness said of itself, kept as metadata rather than turns: the model, the harness's version,
    # tool/agent/skill listings, bookkeeping and injected-context lines, and record kinds no parser knew.
    model: str = ""
    harness_version: str = ""
    listings: int = 0
    bookkeeping: int = 0
    injected: int = 0
    unknown_kinds: tuple[tuple[str, int], ...] = ()


class SessionRecord(Record, frozen=True):
    """A session: whose, in which harness, on what, and what was recovered from it.

    `scope`, `bank` and `kind` say where the experience lives (the member's `AGENT_CORE`, as
    `experience`). `command` is the harness command line as started (redacted). `redactions`
    counts the redacted values by type, never the values.
    """

    id: str
    member: str
    harness: Harness
    origin: SessionOrigin
    state: SessionState
    started_at: float
    bank: str
    execution: str = ""
    task: str = ""
    directory: str = ""
    command: tuple[str, ...] = ()
    ended_at: float | None = None
    exit_code: int | None = None
    outcome: str = ""
    note: str = ""
    parts: tuple[TranscriptPart, ...] = ()
    turns: int = 0
    redactions: tuple[tuple[str, int], ...] = ()
    scope: str = "AGENT_CORE"
    kind: str = "experience"


class SessionSource(Record, frozen=True):
    """Which session holds a harness's transcript (`harness/external id`): one file is attributed once."""

    session: str
    part: int


class RecoveredTranscript(Record, frozen=True):
    """Everything recovered from a session's transcript files, already redacted.

    `raw` holds each part's redacted bytes, zlib-compressed, in part order.
    """

    parts: tuple[TranscriptPart, ...] = ()
    turns: tuple[SessionTurn, ...] = ()
    raw: tuple[bytes, ...] = ()
    redactions: tuple[tuple[str, int], ...] = ()


ExcerptKind = Literal["summary", "conclusion", "finding"]


class SessionExcerpt(Record, frozen=True):
    """A piece of a member's experience that curation could admit into its memory.

    `id` is `<session>#<turn>`; `admitted` names the memory record it became, once it did.
    """

    id: str
    session: str
    turn: int
    member: str
    harness: Harness
    kind: ExcerptKind
    text: str
    at: float
    truncated: bool = False
    admitted: str = ""


class SessionCandidate(Record, frozen=True):
    """A harness's historical session found on disk, which the owner may import for a member."""

    id: str
    harness: Harness
    path: str
    size: int
    modified_at: float
    title: str = ""
    cwd: str = ""
    attributed_to: str = ""


class SessionProgress(Record, frozen=True):
    """A running session, as `resident progress` shows it."""

    id: str
    member: str
    harness: Harness
    execution: str
    task: str
    directory: str
    started_at: float


# -- events --------------------------------------------------------------------------------------


class SessionStarted(Event, frozen=True, tag="session.started"):
    """A member's session began on a running execution, which from now on points to it."""

    session: SessionRecord


class SessionRecovered(Event, frozen=True, tag="session.recovered"):
    """A started session ended and its transcript was recovered (possibly none was found)."""

    id: str
    ended_at: float
    transcript: RecoveredTranscript
    exit_code: int | None = None
    outcome: str = ""
    note: str = ""


class SessionImported(Event, frozen=True, tag="session.imported"):
    """The owner attributed a historical transcript to a member's experience."""

    session: SessionRecord
    transcript: RecoveredTranscript
