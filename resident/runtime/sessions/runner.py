"""The execution runner: dispatched executions run as member sessions in the background, a few at a time.

A dispatch that names a harness leaves its execution waiting, with its launch kept in the home
(`resident.runtime.sessions.launching`). The runner starts waiting executions oldest first while fewer than
`[sessions] max_running` run. Each runs under its own background process (`resident.sessions.background`),
started in a session of its own so that it outlives the process that dispatched it and the runtime itself: the
runner starts that process, starts the member's session on it (projection, grant token, sandbox), then hands
it the command line. The harness runs in a process group of its own; when it ends, the background process
writes its exit status into the session's folder and exits, and the runner ends the session (directory
restored, transcript recovered, execution finished with that status).

After a crash, the runtime that opens the home next adopts what still runs (it waits on the process's pidfd,
since it is not its child) and ends what ended meanwhile, with the status it left. Nothing here sleeps: the
runner's thread waits for a wake-up (a dispatch, a session that ended) and each watcher on its process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable

from resident.messages.coordination import Execution
from resident.messages.coordination_calls import FinishRequest
from resident.messages.sessions_calls import StartSession
from resident.runtime.caller import Caller
from resident.runtime.context import Call, Context
from resident.runtime.coordination import finish
from resident.runtime.sessions.end import end_session
from resident.runtime.sessions.launching import (
    LaunchSpec,
    forget_launch,
    kept_launches,
    launches_root,
    load_launch,
)
from resident.runtime.sessions.liveness import live
from resident.runtime.sessions.start import start
from resident.runtime.sessions.tree import manifests, sessions_root
from resident.sessions.background import read_exit_status
from resident.store.execution_index import covers, indexed
from resident.store.tables import EXECUTIONS

__all__ = ["BACKGROUND_MODULE", "ExecutionRunner"]

logger = logging.getLogger(__name__)

BACKGROUND_MODULE = "resident.sessions.background"
_CLOSE_TIMEOUT = 30.0


class ExecutionRunner:
    """Starts waiting executions within the limit and ends each session when its harness exits (see the module)."""

    def __init__(self) -> None:
        self._context: Context | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        # Sessions running now, by session id: the execution each works on.
        self._running: dict[str, str] = {}
        self._closing = False
        self._thread: threading.Thread | None = None
        self._watchers: list[threading.Thread] = []
        # Written to once, on close: every watcher waits on it beside its process, and returns.
        self._closed_read, self._closed_write = os.pipe()
        # What tells a harness how to reach the API that serves this runtime (its address and the session's proof
        # key, for a sandboxed harness that cannot read api.json); set by the surface that serves the API.
        self.callback: Callable[[str], dict[str, str]] = lambda _session: {}

    def bind(self, context: Context) -> None:
        self._context = context

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def start(self) -> None:
        """Adopt the background sessions still running, end those that ended meanwhile, then start waiting ones."""
        context = self._require()
        if context.store.readonly:
            return
        self._recover(context)
        self._thread = threading.Thread(target=self._loop, name="resident-executions", daemon=True)
        self._thread.start()
        self.wake()

    def wake(self) -> None:
        """Look for waiting executions now (a dispatch, or a slot that came free)."""
        self._wake.set()

    def close(self) -> None:
        """Stop starting executions; those running go on in their own processes (the next runtime adopts them)."""
        if self._closing:
            return
        self._closing = True
        self._wake.set()
        os.write(self._closed_write, b"x")
        for thread in [self._thread, *self._watchers]:
            if thread is not None:
                thread.join(_CLOSE_TIMEOUT)
        os.close(self._closed_read)
        os.close(self._closed_write)

    def _require(self) -> Context:
        if self._context is None:
            raise RuntimeError("the execution runner is used before the runtime bound it")
        return self._context

    def _recover(self, context: Context) -> None:
        self._forget_stale_launches(context)
        with context.store.reader() as reader:
            background = {
                m.session: m for m in manifests(context.home)
                if (e := reader.get(EXECUTIONS, m.execution)) is not None and e.harness
            }
        for session_id, manifest in background.items():
            if live(manifest) and manifest.state == "running":
                self._adopt(session_id, manifest.execution, manifest.process)
            elif not live(manifest):
                self._end(context, session_id)

    def _forget_stale_launches(self, context: Context) -> None:
        """Remove launches a crash left behind: those of executions that ended (or were never recorded)."""
        with context.store.reader() as reader:
            stale = [
                execution_id for execution_id in kept_launches(context.home)
                if (e := reader.get(EXECUTIONS, execution_id)) is None or e.outcome != "running"
            ]
        for execution_id in stale:
            with contextlib.suppress(OSError):
                forget_launch(context.home, execution_id)

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closing:
                return
            try:
                self._start_waiting(self._require())
            except Exception:  # the runner goes on; the next wake-up tries again
                logger.exception("starting waiting executions failed")

    def _waiting(self, context: Context) -> list[Execution]:
        with context.store.reader() as reader:
            # Only the running ones are read, through the index where it covers the home.
            running = (
                indexed(reader, state="running") if covers(reader) else (e for _, e in reader.items(EXECUTIONS))
            )
            found = [e for e in running if e.outcome == "running" and e.harness and not e.session]
        return sorted(found, key=lambda e: e.started_at)

    def _start_waiting(self, context: Context) -> None:
        for execution in self._waiting(context):
            if self._closing or self.running >= context.config.max_running:
                return
            launch = load_launch(context.home, execution.id)
            if launch is None:
                self._fail(context, execution.id, "its launch (what to run) was lost from the home")
                continue
            self._launch(context, execution, launch)

    def _launch(self, context: Context, execution: Execution, launch: LaunchSpec) -> None:
        """Start the background process, the member's session on it, then hand it the harness's command line."""
        background = subprocess.Popen(  # noqa: S603 - this Python, running a module of this package
            [sys.executable, "-m", BACKGROUND_MODULE], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, cwd=launch.directory,
        )
        assert background.stdin is not None  # opened as a pipe just above
        try:
            launched = start(context, Call(Caller()), StartSession(
                execution.member, harness=launch.harness, command=launch.command, directory=launch.directory,  # type: ignore[arg-type]  # checked at dispatch
                task=execution.id, process=background.pid, sandbox=launch.sandbox,
                search_path=os.environ.get("PATH", os.defpath),
            ))
        except Exception as error:  # noqa: BLE001 - whatever stopped the start, the execution fails saying so
            background.stdin.close()  # nothing to run: it exits
            background.wait()
            self._fail(context, execution.id, f"the session did not start: {error}")
            return
        folder = sessions_root(context.home) / launched.session
        handed = {
            "argv": list(launched.argv), "directory": launched.directory, "folder": str(folder),
            "log": str(launches_root(context.home) / f"{execution.id}.log"),
            "env": {**os.environ, **launched.variables, **self.callback(launched.session)},
        }
        with self._lock:
            self._running[launched.session] = execution.id
        try:
            background.stdin.write(json.dumps(handed).encode("utf-8"))
            background.stdin.close()
        except OSError:
            logger.exception("session %s: its background process went before the harness started", launched.session)
        self._watch(launched.session, background.pid, background.wait)

    def _adopt(self, session_id: str, execution_id: str, pid: int) -> None:
        """Watch a background process a runtime before this one started (not a child of this process)."""
        with self._lock:
            self._running[session_id] = execution_id
        self._watch(session_id, pid, None)

    def _watch(self, session_id: str, pid: int, reap: Callable[[], object] | None) -> None:
        """Wait for the process `pid` to exit (its pidfd: it need not be a child), then end its session.

        `reap` collects a child of this process. On close the watcher returns without ending anything: the
        process goes on, and the runtime that opens the home next adopts it.
        """
        try:
            descriptor = os.pidfd_open(pid)
        except ProcessLookupError:  # it already ended
            descriptor = -1

        def watch() -> None:
            if descriptor >= 0:
                try:
                    readable, _, _ = select.select([descriptor, self._closed_read], [], [])
                finally:
                    os.close(descriptor)
                if descriptor not in readable:
                    return
            if reap is not None:
                reap()
            with self._lock:
                self._running.pop(session_id, None)
            if not self._closing:
                self._end(self._require(), session_id)
                self.wake()

        thread = threading.Thread(target=watch, name=f"resident-session-{session_id}", daemon=True)
        self._watchers = [t for t in self._watchers if t.is_alive()]
        self._watchers.append(thread)
        thread.start()

    def _end(self, context: Context, session_id: str) -> None:
        """End a background session with the exit status its process left (none: it died before the harness ended)."""
        status = read_exit_status(sessions_root(context.home) / session_id)
        try:
            end_session(context, session_id, status, died=status is None)
        except Exception:  # logged; `resident session recover` ends it later
            logger.exception("background session %s could not be ended", session_id)

    def _fail(self, context: Context, execution_id: str, why: str) -> None:
        with contextlib.suppress(Exception):
            forget_launch(context.home, execution_id)
        try:
            finish(context, Call(Caller()), FinishRequest(execution_id, "failed", error=why))
        except Exception:  # logged; the execution stays running until someone finishes it
            logger.exception("execution %s could not be failed (%s)", execution_id, why)

