"""The bridged Cognition service as a supervised child process (`[cognition] supervise = true`).

The actor starts the configured command as a guarded child (`resident.children.spawn_command`: its own process
group, stopped with the runtime, its output appended to `<home>/cognition.log`, its process group id in
`<home>/cognition.pid`), then watches it on the runtime's clock: every `watch_every` seconds it checks that the
process still runs and probes the service's `GET /health`. A process that exited, or a service that answered
health once and then failed `unhealthy_after` probes in a row, is a crash: the supervisor starts a new
incarnation (a new process) after its backoff. Until the first healthy answer the actor's condition says it is
starting; the bridge meanwhile answers as degraded.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from resident.children import ChildProcess, spawn_command
from resident.files import write_private_file
from resident.messages.base import Message
from resident.supervisor import SupervisedActor
from resident.supervisor.spec import ChildContext

__all__ = ["LOG_FILE", "PID_FILE", "CognitionService", "ServiceExited"]

LOG_FILE = "cognition.log"
PID_FILE = "cognition.pid"
_STOP_SECONDS = 20.0
# One probe's budget: the actor has nothing else to answer, and a wedged service must not hold it longer.
_PROBE_SECONDS = 1.0


class ServiceExited(RuntimeError):
    """The supervised service's process ended or stopped answering; the supervisor starts it again."""


class _Watch(Message, frozen=True, tag="cognition.watch"):
    pass


class CognitionService(SupervisedActor):
    def __init__(
        self, context: ChildContext, *, home: Path, command: Sequence[str], environment: Mapping[str, str], url: str,
        token: str | None = None, watch_every: float = 1.0, unhealthy_after: int = 5,
    ) -> None:
        super().__init__(context)
        self.home = home
        self.command = tuple(command)
        self.environment = dict(environment)
        self.url = url
        # The probe presents the bridge's token: a service that checks one answers nothing without it.
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.watch_every = watch_every
        self.unhealthy_after = unhealthy_after
        self._child: ChildProcess | None = None
        self._healthy_once = False
        self._failed_probes = 0
        self._watch = self.wake_up(_Watch())

    def setup(self) -> None:
        self._child = spawn_command(
            self.command, env={**os.environ, **self.environment}, log=self.home / LOG_FILE
        )
        write_private_file(self.home / PID_FILE, f"{self._child.pid}\n".encode())
        self.set_condition("starting: the service has not answered its health probe yet")
        self._watch.after(self.watch_every)

    def handle(self, message: Any) -> Any:
        match message:
            case _Watch():
                return self._check()
            case _:
                return super().handle(message)

    def _check(self) -> None:
        self._watch.done()
        child = self._child
        if child is None or child.poll() is not None:
            code = None if child is None else child.returncode
            raise ServiceExited(f"the cognition service exited (code {code}); restarting it")
        if self._healthy():
            self._healthy_once, self._failed_probes = True, 0
            self.set_condition("")
        elif self._healthy_once:
            self._failed_probes += 1
            self.set_condition(f"the service failed {self._failed_probes} health probes in a row")
            if self._failed_probes >= self.unhealthy_after:
                raise ServiceExited(f"the cognition service failed {self._failed_probes} health probes; restarting it")
        self._watch.after(self.watch_every)

    def _healthy(self) -> bool:
        try:
            answer = httpx.get(f"{self.url}/health", headers=self._headers, timeout=_PROBE_SECONDS, trust_env=False)
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def teardown(self) -> None:
        self._end(graceful=True)

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - whatever the crash, the process goes
        self._end(graceful=False)

    def _end(self, *, graceful: bool) -> None:
        child, self._child = self._child, None
        if child is not None and child.poll() is None:
            try:
                if graceful:
                    child.stop(_STOP_SECONDS)
                else:
                    child.kill(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill(_STOP_SECONDS)
        with contextlib.suppress(FileNotFoundError):
            (self.home / PID_FILE).unlink()
