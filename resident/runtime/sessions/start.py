"""Starting a member's session: its execution and grant token, its work package, its projection.

In order, each step written down before the next: the manifest (so a crash from here on is
recovered), the execution the session works on (a new dispatch under a grant the owner issues for
it, or an execution dispatched earlier that has no session yet), the `SessionStarted` event (the
execution now points to the session), the projection into the working directory, and the listing of
the harness's transcripts as they were. Anything failing on the way ends the session at once — the
projection restored, the execution failed with the reason — and the failure goes on to the caller.
The harness itself runs in the process that asked (`resident.sessions.launch`), never here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
from pathlib import Path

import platformdirs

from resident.children.orphans import process_start
from resident.coordination.callback_env import SESSION_ENV
from resident.coordination.grants import ROLE_ACTIONS
from resident.coordination.tokens import GRANT_FILE_ENV, GRANT_TOKEN_ENV, new_token, token_digest
from resident.errors import GrantExceeded, HarnessNotFound, InvalidInput, ProjectionRefused, ResidentError
from resident.ids import new_id
from resident.memory.banks import bank_name
from resident.memory.records import clean_text
from resident.messages.coordination import GrantToken, GrantTokenIssued
from resident.messages.coordination_calls import IssueGrant
from resident.messages.engagement import EngagementContext
from resident.messages.sessions import HARNESSES, Harness, SessionRecord, SessionStarted
from resident.messages.sessions_calls import Launched, StartSession
from resident.messages.store import Commit
from resident.processes import pid_alive
from resident.runtime.context import Call, Context
from resident.runtime.coordination import Session, dispatch_session, issue_grant, resume_session
from resident.runtime.principles import principles_of
from resident.runtime.sessions.end import end_session
from resident.runtime.sessions.harness_config import SHARED, configure_codex, write_grant_file
from resident.runtime.sessions.liveness import live
from resident.runtime.sessions.sandbox import sandboxed
from resident.runtime.sessions.transcripts import HARNESS_ENV, harness_home, layout, redaction_key, scan
from resident.runtime.sessions.tree import (
    Manifest,
    ProjectionTree,
    manifests,
    save_manifest,
    session_dir,
    sessions_root,
)
from resident.runtime.sessions.work import work_item
from resident.runtime.skills.library import chosen_skills
from resident.sessions.projection import AGENTS_FILE, CLAUDE_FILE, MCP_FILE, Remembered, WorkPackage, plan_projection
from resident.sessions.redaction import Redactor
from resident.store.home import HOME_ENV
from resident.store.tables import EXECUTIONS

__all__ = ["DEFAULT_COMMANDS", "check_harness", "harness_command", "resident_command", "start", "working_directory"]

logger = logging.getLogger(__name__)

DEFAULT_COMMANDS: dict[Harness, tuple[str, ...]] = {"claude-code": ("claude",), "codex": ("codex",), "pi": ("pi",)}
MAX_TASK_CHARS = 4_000
MAX_COMMAND_ARGS = 1_000
RECALLED = 8
RECALL_BUDGET = 4_000
TRANSCRIPT_FILE = "transcript.jsonl"
MEMBER_ENV = "RESIDENT_MEMBER"


def resident_command() -> tuple[str, ...]:
    """This `resident`, by absolute path: the console script beside this Python, else this Python running it."""
    script = Path(sys.executable).with_name("resident")
    if script.is_file() and os.access(script, os.X_OK):
        return (str(script),)
    return (sys.executable, "-m", "resident.cli")


def check_harness(value: str) -> Harness:
    if value not in HARNESSES:
        raise InvalidInput(f"unknown harness {value!r}; harnesses: {', '.join(HARNESSES)}")
    return value


def harness_command(harness: Harness, command: tuple[str, ...], path: str | None) -> tuple[str, ...]:
    argv = command or DEFAULT_COMMANDS.get(harness, ())
    if not argv:
        raise InvalidInput("the command harness needs the command to run, after `--`")
    if len(argv) > MAX_COMMAND_ARGS or any(not isinstance(a, str) or "\0" in a for a in argv):
        raise InvalidInput("a harness command is at most 1,000 arguments of text without NUL characters")
    program = shutil.which(argv[0], path=path)
    if program is None:
        raise HarnessNotFound(f"{argv[0]!r} is not an executable on PATH; install it or give the command after `--`")
    # A relative program (`./run.sh`) is found from here; the harness runs in the working directory.
    return (str(Path(program).absolute()), *argv[1:]) if os.sep in argv[0] else argv


def working_directory(value: str) -> Path:
    directory = Path(os.path.realpath(Path(value).expanduser()))
    if not directory.is_dir():
        raise InvalidInput(f"{value} is not a folder; give the repository to work in with --dir")
    return directory


def _launcher(process: int | None) -> tuple[int, str | None]:
    """The process that runs the harness, and when it started (to tell it from a later one with its pid)."""
    if process is None:
        return os.getpid(), process_start(os.getpid())
    start = process_start(process)
    if start is None and not pid_alive(process):
        raise InvalidInput(f"no process {process} runs here to launch the session's harness")
    return process, start


def _claim(context: Context, member: str, harness: Harness, directory: Path, process: int | None) -> Manifest:
    launcher, started = _launcher(process)
    for other in manifests(context.home):
        if other.directory == str(directory) and live(other):
            raise ProjectionRefused(
                f"{directory} is in use by session {other.session} of {other.member} (process {other.process}); "
                "start this one when it ends, or in another --dir"
            )
    manifest = Manifest(
        session=new_id("ses"), member=member, harness=harness, directory=str(directory), process=launcher,
        process_start=started, started_at=context.clock.time(),
    )
    save_manifest(context.home, manifest)
    return manifest


def _attach(context: Context, execution_id: str, member: str) -> Session:
    """A fresh token for an execution dispatched earlier (the session works on it under its grant)."""
    with context.store.reader() as reader:
        execution = reader.get(EXECUTIONS, execution_id)
    if execution is None:
        raise InvalidInput(f"no execution {execution_id}; see `resident progress`")
    if execution.member != member or execution.outcome != "running" or execution.session:
        raise InvalidInput(
            f"execution {execution_id} is {execution.member}'s, {execution.outcome}"
            + (f", worked on by {execution.session}" if execution.session else "")
            + f"; a session of {member} can take only a running execution of {member} with no session yet"
        )
    token = new_token()
    issued = GrantTokenIssued(
        at=context.clock.time(),
        token=GrantToken(digest=token_digest(token), grant=execution.grant, member=member, execution=execution.id,
                         issued_at=context.clock.time()),
    )
    context.write(Commit(events=(issued,)))
    return resume_session(context, token)


def _execution(
    context: Context, call: Call, request: StartSession, manifest: Manifest, *, harness: Harness, directory: Path
) -> tuple[Session, str]:
    """The session's execution (and its task text): taken over, or dispatched now."""
    task = (request.task or "").strip()
    if task.startswith("exec_"):
        session = _attach(context, task, manifest.member)
        return session, session.execution.task
    text = clean_text(task or f"a {harness} session in {directory.name}", "the task", MAX_TASK_CHARS)
    # The task is stored (execution, session, progress) and projected for the harness: a credential
    # typed into `--task` is redacted before any of that, like the transcript and the command line.
    text = Redactor(redaction_key(context.home)).redact(text)
    if request.role not in ROLE_ACTIONS:
        raise InvalidInput(f"unknown role {request.role!r}; roles: {', '.join(sorted(ROLE_ACTIONS))}")
    if not 60.0 <= request.ttl <= 30 * 86_400.0:
        raise InvalidInput("a session's grant lasts from 60 seconds to 30 days (--ttl SECONDS)")
    grant = issue_grant(context, call, IssueGrant(actions=ROLE_ACTIONS[request.role], ttl=request.ttl))
    engagement = EngagementContext(task=text, directory=str(directory), harness=harness)
    session = dispatch_session(
        context, text, manifest.member, role=request.role, parent_grant=grant, engagement=engagement,
        work=work_item(context, directory, text, harness),
    )
    # Dispatched for this session alone: if the session cannot start, its execution fails with it.
    manifest.owns_execution = True
    return session, text


def _remembered(session: Session, task: str) -> tuple[tuple[Remembered, ...], str]:
    """What the member recalls about the task, through its session (grant and engagement apply)."""
    try:
        hits = asyncio.run(session.recall(task[:1000], RECALLED, char_budget=RECALL_BUDGET))
    except GrantExceeded:
        return (), "This session's grant does not let you recall memories."
    except ResidentError as error:
        return (), f"Nothing was recalled: {error.message}"
    return tuple(Remembered(hit.id, hit.summary, hit.recorded_at) for hit in hits), ""


def _work_package(context: Context, session: Session, task: str, harness: Harness, tree: ProjectionTree) -> WorkPackage:
    member = session.member.name
    memories, note = _remembered(session, task)
    skills = chosen_skills(context, member, task[:1000])
    principles = principles_of(context, member=member, state="approved")
    files = (AGENTS_FILE, CLAUDE_FILE, MCP_FILE) if harness == "claude-code" else (AGENTS_FILE,)
    originals = {name: tree.existing_text(name) for name in files}
    if originals.get(CLAUDE_FILE) == originals[AGENTS_FILE]:
        # A CLAUDE.md that is AGENTS.md (a link, or a copy) already reaches Claude Code through the import.
        originals[CLAUDE_FILE] = ""
    return WorkPackage(
        member=member, role=context.config.member(member).role, harness=harness, session=tree.manifest.session,
        execution=session.execution.id, task=task, memories=memories, memory_note=note,
        principles=tuple(p.text for p in principles), skills=tuple((s.name, s.description) for s in skills),
        actions=session.grant.actions, originals=originals, resident=resident_command(),
    )


def start(context: Context, call: Call, request: StartSession) -> Launched:
    """Start a session (see the module docstring); what the process that runs its harness needs."""
    if call.remote and request.process is None:
        raise InvalidInput("over the API, a session's start names the process that runs its harness (`process`)")
    if call.remote and not Path(request.directory).is_absolute():
        raise InvalidInput(f"the session's directory must be an absolute path, not {request.directory!r}")
    context.check_open()
    member = context.config.member(request.member).name
    harness = check_harness(request.harness)
    search_path = os.environ.get("PATH") if request.search_path is None else request.search_path
    argv = harness_command(harness, tuple(request.command), search_path)
    directory = working_directory(request.directory)
    manifest = _claim(context, member, harness, directory, request.process)
    try:
        return _start(context, call, request, manifest, harness=harness, argv=argv, directory=directory)
    except BaseException as error:
        try:
            why = str(error) or type(error).__name__  # an interruption has no message of its own
            end_session(context, manifest.session, None, failure=f"the session did not start: {why}")
        except Exception:  # the first failure is the one to report; this one is logged
            logger.exception("session %s could not be ended after failing to start", manifest.session)
        raise


def _start(
    context: Context, call: Call, request: StartSession, manifest: Manifest, *, harness: Harness,
    argv: tuple[str, ...], directory: Path,
) -> Launched:
    home = context.home
    session, task = _execution(context, call, request, manifest, harness=harness, directory=directory)
    manifest.execution = session.execution.id
    save_manifest(home, manifest)
    # The command line may carry a credential (`--api-key …`): it is stored redacted, like the transcript.
    redactor = Redactor(redaction_key(home), (session.token,))
    record = SessionRecord(
        id=manifest.session, member=manifest.member, harness=harness, origin="started", state="running",
        started_at=manifest.started_at, bank=bank_name("AGENT_CORE", manifest.member), execution=session.execution.id,
        task=task, directory=str(directory), command=tuple(redactor.redact(arg) for arg in argv),
    )
    context.write(Commit(events=(SessionStarted(at=context.clock.time(), session=record),)))
    manifest.state = "projecting"
    save_manifest(home, manifest)
    tree = ProjectionTree(home, manifest)
    for file in plan_projection(_work_package(context, session, task, harness, tree)):
        tree.write(file.path, file.data)
    if harness == "command":
        manifest.transcript = str(session_dir(home, manifest.session) / TRANSCRIPT_FILE)
        where = manifest.transcript
    else:
        own = harness_home(home, manifest.member, harness)
        manifest.harness_home = str(own)
        manifest.snapshot = scan(own / layout(harness).folder, harness)
        where = str(own)
    # The token also in a file of the harness's own folder, for tools whose environment drops `*TOKEN*` names.
    grant_file = write_grant_file(
        session_dir(home, manifest.session) if harness == "command" else Path(where), manifest.session, session.token
    )
    manifest.grant_file = str(grant_file)
    save_manifest(home, manifest)
    if harness == "codex":
        # Written down first: a session killed while configuring still takes its hold off when recovered.
        manifest.codex_config = SHARED
        save_manifest(home, manifest)
        configure_codex(Path(where), manifest.session, sessions_root(home), resident_command())
    manifest.state = "running"
    save_manifest(home, manifest)
    if request.sandbox:
        argv = _sandboxed(home, argv, directory, Path(where).parent if harness == "command" else Path(where))
    variables = {
        GRANT_TOKEN_ENV: session.token, HOME_ENV: str(home), SESSION_ENV: manifest.session, MEMBER_ENV: manifest.member,
        HARNESS_ENV[harness]: where, GRANT_FILE_ENV: str(grant_file),
    }
    return Launched(
        session=manifest.session, member=manifest.member, harness=harness, execution=session.execution.id, argv=argv,
        directory=str(directory), variables=variables, token=session.token,
    )


def _sandboxed(home: Path, argv: tuple[str, ...], directory: Path, own: Path) -> tuple[str, ...]:
    """`argv` run in bubblewrap: the home and the user's default home hidden, the directory and `own` (the harness's
    home, or the command's session folder, where its transcript is made) visible."""
    default = Path(platformdirs.user_data_dir("resident", appauthor=False))
    return sandboxed(argv, home=home, directory=directory, own=own, hidden=(default,) if default.is_dir() else ())
