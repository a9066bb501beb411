"""`resident session …` and `resident curate`: members at work in harnesses, and their experience.

Every command runs its operations through `runtime_for`: the runtime up for the home, or one opened
here. `session start` uses the runtime only to start and to end the session (two operations); the
harness runs in between in this process, as its child, with the home free when no runtime is up, so
the member's own `resident` calls (with the session's grant token) can open it, or reach the
runtime that is up. Paths are sent absolute, and the harness's history is looked for where this
command's environment says, so the runtime reads what the command means.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from resident.api.challenge import PROOF_KEY_ENV, session_proof_key
from resident.api.discovery import API_ADDRESS_ENV, running
from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import runtime_for
from resident.errors import HomeInUse, SandboxUnavailable
from resident.messages.sessions import HARNESSES, Harness, SessionRecord, SessionTurn, TranscriptPart
from resident.messages.sessions_calls import (
    DEFAULT_TTL,
    AdmitExcerpt,
    CandidatesQuery,
    EndSession,
    ExcerptsQuery,
    ImportSessions,
    ListSessions,
    RawQuery,
    RecoverSessions,
    ShowSession,
    StartSession,
)
from resident.operations import sessions as ops
from resident.terminal import printable

if TYPE_CHECKING:
    from resident.sessions.launch import SessionLaunch

__all__ = ["COMMANDS"]



def _time(timestamp: float | None) -> str:
    return "-" if timestamp is None else datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _summary(record: SessionRecord) -> str:
    found = ", ".join(f"{count} {kind}" for kind, count in record.redactions) or "none"
    state = record.outcome or record.state
    return (
        f"session {record.id} of {record.member} ({record.harness}): {state}; {record.turns} turns from "
        f"{len(record.parts)} transcript file(s); redacted: {found}" + (f"; {record.note}" if record.note else "")
    )


def _part_metadata(part: TranscriptPart) -> str:
    """What the harness kept for itself in a transcript file, which `show` counts instead of showing as turns."""
    said = [text for text in (part.model and f"model {part.model}", part.harness_version and f"version "
                              f"{part.harness_version}") if text]
    counted = [f"{count} {name}" for name, count in (("listings", part.listings), ("bookkeeping", part.bookkeeping),
                                                    ("injected context", part.injected)) if count]
    if counted:
        said.append("kept as metadata: " + ", ".join(counted))
    if part.unknown_kinds:
        said.append("unknown kinds: " + ", ".join(f"{kind} {count}" for kind, count in part.unknown_kinds))
    return "; " + "; ".join(said) if said else ""


@click.group(short_help="Members at work in Claude Code, Codex, pi or any command; their sessions.")
def session() -> None:
    """A session projects a member into a harness (instructions, skills, a work package, its
    grant token), runs it, and recovers its transcript, redacted, as the member's experience.
    Sessions started outside the runtime are attributed only by `session import`.
    """


def _note(as_json: bool, text: str) -> None:
    """A line for the person at the terminal (the harness's own output follows it); none with --json."""
    if not as_json:
        click.echo(printable(f"resident: {text}"), err=True)


def _absolute(path: str) -> str:
    """`path` as the runtime reads it: absolute, from this command's working folder and user."""
    return str(Path(path).expanduser().absolute())


def _history(harness: str, path: str | None) -> Path:
    """Where to look for `harness`'s history: `path`, else where this command's environment says it keeps it."""
    if path:
        return Path(_absolute(path))
    from resident.runtime.sessions.history import default_root  # noqa: PLC0415 - only these two commands need it

    return default_root(cast("Harness", harness), os.environ, Path.home())


def _start_request(
    member: str, command: tuple[str, ...], harness: str, directory: str, task: str | None, role: str, ttl: float,
    sandbox: bool,
) -> StartSession:
    """The start of a session this process runs: its pid, its PATH, the directory and a relative program absolute."""
    if command and os.sep in command[0]:
        command = (_absolute(command[0]), *command[1:])
    return StartSession(
        member, harness=cast("Harness", harness), directory=_absolute(directory), process=os.getpid(),
        command=command, task=task, role=role, ttl=ttl, search_path=os.environ.get("PATH", os.defpath),
        sandbox=sandbox,
    )


def _callback(state: CliState, session: str) -> dict[str, str]:
    """How the harness reaches the runtime without api.json: the API's address and its session's proof key."""
    from resident.store.home import resolve_home  # noqa: PLC0415 - only a start runs a harness

    found = running(resolve_home(state.home))
    if found is None or found.unix_path is not None:
        return {API_ADDRESS_ENV: "", PROOF_KEY_ENV: ""}
    return {API_ADDRESS_ENV: found.address, PROOF_KEY_ENV: session_proof_key(found.token, session)}


def _end(state: CliState, launch: SessionLaunch, status: int | None, interrupted: bool) -> SessionRecord | None:
    request = EndSession(launch.session, status, interrupted=interrupted, token=launch.token)
    try:
        with runtime_for(state) as runtime:
            # Recovering a long transcript may take a while (the route waits long); the runtime's deadlines apply.
            ended: SessionRecord | None = runtime.run(ops.END, request).session
    except HomeInUse as error:
        raise HomeInUse(
            f"session {launch.session} ended, but {error.message}; run `resident session recover` once it is free "
            "to restore the directory and recover the transcript"
        ) from None
    return ended


@session.command(name="start")
@click.argument("member", type=UTF8)
@click.argument("command", nargs=-1, type=UTF8)
@click.option("--harness", type=click.Choice(HARNESSES), required=True, help="What the member works in.")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=str), default=".",
              show_default=True, help="The repository to work in (projected into, and restored after).")
@click.option("--task", type=UTF8, help="The task's text, or the id of an execution dispatched to MEMBER earlier.")
@click.option("--role", default="implement", show_default=True, help="The role its grant is issued for.")
@click.option("--ttl", type=click.FloatRange(60, 30 * 86_400), default=DEFAULT_TTL, show_default=True,
              help="Seconds the session's grant lasts.")
@click.option("--unsandboxed", is_flag=True,
              help="Run the harness without bubblewrap: it can then read the home, and act as the owner.")
@json_option
@pass_state
def start(
    state: CliState, member: str, command: tuple[str, ...], harness: str, directory: str, task: str | None, role: str,
    ttl: float, unsandboxed: bool, as_json: bool,
) -> None:
    """Start MEMBER's session in a harness: `resident session start deven --harness claude-code -- claude`.

    The member is projected into --dir (AGENTS.md, CLAUDE.md for Claude Code, at most ten skills,
    the task, what it remembers, its principles, how to call back), the harness runs here as
    COMMAND (given after `--`; else the harness's usual one: claude, codex, pi) with the session's
    grant token and its own home under the resident home, and when it exits (or is stopped with
    Ctrl-C) the directory is restored and the transcript recovered, redacted. Exits with the
    harness's status.
    """
    request = _start_request(
        member, command, harness, directory, task, role, ttl, not unsandboxed and _sandbox_wanted(state)
    )
    with _up_for_the_session(state):
        _start_run_and_end(state, request, as_json)


def _sandbox_wanted(state: CliState) -> bool:
    """Whether the harness runs sandboxed: unless `[sessions] sandbox = false`; refused where none can be had."""
    from resident.config import load_config  # noqa: PLC0415 - only a start runs a harness
    from resident.runtime.sessions.sandbox import sandbox_unavailable  # noqa: PLC0415 - only a start runs a harness
    from resident.store.home import CONFIG_FILE, resolve_home  # noqa: PLC0415 - only a start runs a harness

    if not load_config(resolve_home(state.home) / CONFIG_FILE).session_sandbox:
        return False
    reason = sandbox_unavailable()
    if reason is not None:
        raise SandboxUnavailable(
            f"{reason}, so the member's harness could read the home and act as the owner; install bubblewrap, "
            "or pass --unsandboxed, or set `[sessions] sandbox = false` in resident.toml"
        )
    return True


@contextmanager
def _up_for_the_session(state: CliState) -> Iterator[None]:
    """The home's runtime, up for the whole session: the one `resident up` runs, else one served from here.

    The harness's own `resident` calls (the member's, with its grant token) then all reach one
    runtime through the API; opening the home themselves, two at the same moment would meet its lock.
    """
    from resident.api.discovery import running  # noqa: PLC0415 - loaded only when this runs
    from resident.store.home import resolve_home  # noqa: PLC0415 - loaded only when this runs

    home = resolve_home(state.home)
    if running(home) is not None:
        yield
        return
    from resident.api.server import serving  # noqa: PLC0415 - the server stack only where a session runs
    from resident.runtime import Runtime  # noqa: PLC0415 - loaded only when this runs

    with Runtime.open(home) as runtime, serving(runtime):
        yield


def _start_run_and_end(state: CliState, request: StartSession, as_json: bool) -> None:
    from resident.sessions.launch import SessionLaunch  # noqa: PLC0415 - only a start runs a harness

    with runtime_for(state) as runtime:
        for recovered in runtime.run(ops.RECOVER, RecoverSessions()).recovered:
            _note(as_json, f"recovered {_summary(recovered)}")
        launched = runtime.run(ops.START, request)
        launch = SessionLaunch.of(launched, _callback(state, launched.session))
    _note(as_json, f"session {launch.session} of {launch.member} on {launch.execution} in {launch.directory}")
    status: int | None = None
    interrupted = True
    try:
        # With --json the harness writes to stderr: stdout holds the one JSON answer.
        status = launch.run(output_to_stderr=as_json)
        interrupted = False
    finally:
        record = _end(state, launch, status, interrupted)
    if as_json:
        emit_json(record)
    elif record is not None:
        stdout.print(_summary(record))
    if status:
        raise SystemExit(status)


@session.command(name="list")
@click.option("--member", type=UTF8, metavar="MEMBER", help="Only MEMBER's (a member session: only its own).")
@click.option("--state", "wanted", type=click.Choice(["running", "recovered"]), help="Only in this state.")
@json_option
@pass_state
def list_command(state: CliState, member: str | None, wanted: str | None, as_json: bool) -> None:
    """Sessions, oldest first: whose, which harness, started or imported, outcome, turns."""
    with runtime_for(state, create=False) as runtime:
        found = runtime.run(ops.LIST, ListSessions(member=member, state=wanted)).sessions
    if as_json:
        emit_json({"sessions": found})
        return
    print_table(
        ("id", "member", "harness", "origin", "started", "outcome", "turns", "task"),
        (
            (s.id, s.member, s.harness, s.origin, _time(s.started_at), s.outcome or s.state, str(s.turns), s.task)
            for s in found
        ),
        ids=("id",), title=f"{len(found)} sessions",
    )


def _turn_line(turn: SessionTurn) -> str:
    what = turn.kind if not turn.tool else f"{turn.kind} {turn.tool}"
    branch = " (branch)" if turn.branch else ""
    return f"[{turn.index}] {turn.role} · {what}{branch}\n{turn.text}\n"


@session.command()
@click.argument("session_id", metavar="ID", type=UTF8)
@click.option("--start", "first", type=click.IntRange(0), default=0, help="The first turn to show.")
@click.option("--limit", type=click.IntRange(1, 100_000), default=200, show_default=True, help="Turns to show.")
@click.option("--raw", "raw_part", type=click.IntRange(0), metavar="PART",
              help="Print transcript file PART as it was stored (redacted JSONL) instead of the turns.")
@json_option
@pass_state
def show(state: CliState, session_id: str, first: int, limit: int, raw_part: int | None, as_json: bool) -> None:
    """Session ID and its redacted turns in conversation order (a member sees only its own)."""
    with runtime_for(state, create=False) as runtime:
        if raw_part is not None:
            raw = runtime.run(ops.RAW, RawQuery(session_id, raw_part)).data
            click.echo(printable(raw.decode("utf-8", "replace")), nl=False)
            return
        view = runtime.run(ops.SHOW, ShowSession(session_id, start=first, limit=limit))
    if as_json:
        emit_json(view)
        return
    record, turns = view.session, view.turns
    stdout.print(_summary(record))
    stdout.print(f"task: {record.task}\ndirectory: {record.directory}\nstarted {_time(record.started_at)}, "
                 f"ended {_time(record.ended_at)}")
    for part in record.parts:
        stdout.print(f"part {part.index}: {part.source} ({part.title or part.external_id}, {part.size} bytes)"
                     + _part_metadata(part))
    stdout.print("")
    for turn in turns:
        stdout.print(_turn_line(turn))


@session.command()
@click.argument("session_id", metavar="[ID]", type=UTF8, required=False)
@json_option
@pass_state
def recover(state: CliState, session_id: str | None, as_json: bool) -> None:
    """End the sessions (or session ID) whose process died (a crash, kill -9): restore, recover them."""
    with runtime_for(state) as runtime:
        found = runtime.run(ops.RECOVER, RecoverSessions(session_id)).recovered
    if as_json:
        emit_json({"recovered": found})
        return
    for record in found:
        stdout.print(_summary(record))
    if not found:
        stdout.print("no session was left by a process that died")


@session.command()
@click.option("--harness", type=click.Choice(HARNESSES), required=True, help="Whose history to list.")
@click.option("--path", type=click.Path(path_type=str), help="The folder or file to look in (default: the harness's).")
@json_option
@pass_state
def candidates(state: CliState, harness: str, path: str | None, as_json: bool) -> None:
    """Historical sessions of a harness found on disk, newest first, that the owner may import."""
    query = CandidatesQuery(cast("Harness", harness), _history(harness, path))
    with runtime_for(state) as runtime:
        found = runtime.run(ops.CANDIDATES, query).candidates
    if as_json:
        emit_json({"candidates": found})
        return
    print_table(
        ("id", "modified", "size", "title", "directory", "attributed to"),
        ((c.id, _time(c.modified_at), str(c.size), c.title, c.cwd, c.attributed_to or "-") for c in found),
        ids=("id",), title=f"{len(found)} {harness} sessions",
    )


@session.command(name="import")
@click.argument("ids", metavar="ID...", nargs=-1, required=True, type=UTF8)
@click.option("--member", type=UTF8, required=True, help="The member whose experience they become.")
@click.option("--harness", type=click.Choice(HARNESSES), required=True, help="The harness that wrote them.")
@click.option("--path", type=click.Path(path_type=str), help="Where they are (as given to `candidates`).")
@json_option
@pass_state
def import_command(state: CliState, ids: tuple[str, ...], member: str, harness: str, path: str | None,
                   as_json: bool) -> None:
    """Attribute the historical sessions ID... (from `candidates`) to a member's experience, redacted.

    The owner's call: nothing is attributed otherwise. Every ID is checked before anything is
    imported; one already held by a session is skipped.
    """
    request = ImportSessions(ids, member=member, harness=cast("Harness", harness), path=_history(harness, path))
    with runtime_for(state) as runtime:
        report = runtime.run(ops.IMPORT, request)
    if as_json:
        emit_json(report)
        return
    for record in report.imported:
        stdout.print(_summary(record))
    for skipped in report.skipped:
        stdout.print(f"skipped {skipped.id}: {skipped.why}")


@click.command()
@click.argument("member", type=UTF8)
@click.option("--session", "session_id", type=UTF8, help="Only this session's excerpts.")
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True, help="Excerpts to list.")
@click.option("--admit", "excerpt", type=UTF8, metavar="EXCERPT", help="Admit this excerpt (ses_…#N) as a memory.")
@click.option("--text", type=UTF8, help="With --admit: the memory's text, if not the excerpt's own.")
@click.option("--summary", type=UTF8, help="With --admit: the memory's summary.")
@click.option("--importance", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="With --admit: the memory's importance.")
@json_option
@pass_state
def curate(
    state: CliState, member: str, session_id: str | None, limit: int, excerpt: str | None, text: str | None,
    summary: str | None, importance: float, as_json: bool,
) -> None:
    """Excerpts of MEMBER's experience that could become memories; --admit one through the admission gate.

    Offered: summaries, each session's conclusion, and longer findings on its final path. An
    admitted excerpt becomes a memory citing its session (and a versioned change that rolls back).
    """
    if excerpt is None and (text is not None or summary is not None):
        raise click.UsageError("--text and --summary go with --admit")
    with runtime_for(state) as runtime:
        if excerpt is not None:
            admit = AdmitExcerpt(member, excerpt, text=text, summary=summary, importance=importance)
            receipt = runtime.run(ops.ADMIT, admit)
            if as_json:
                emit_json(receipt)
            else:
                stdout.print(f"admitted {excerpt} into {member}'s memory as {receipt.id} ({receipt.replication})")
            return
        found = runtime.run(ops.EXCERPTS, ExcerptsQuery(member, session=session_id, limit=limit)).excerpts
    if as_json:
        emit_json({"excerpts": found})
        return
    print_table(
        ("excerpt", "kind", "when", "admitted", "text"),
        ((e.id, e.kind, _time(e.at), e.admitted or "-", e.text) for e in found),
        ids=("excerpt",), title=f"{len(found)} excerpts of {member}'s experience",
    )


COMMANDS = (session, curate)
