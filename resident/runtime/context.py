"""What a service may use, handed to it explicitly: the store, the actors it talks to, the clock, the configuration.

A service is a plain function `service(context, call, request) -> reply` (`resident.operations`); it
never sees the `Runtime`. The context is made once when a runtime opens and lives as long as it does.
`call` says who is calling (the owner, a member session under its grant, or an app) and on which
member's surface, when the operation is bound to one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from resident.clock import Clock
from resident.config import Config
from resident.errors import AskTimeout, MemoryDisabled, ResidentError, SubstrateUnavailable
from resident.messages.store import Commit
from resident.messages.supervision import SupervisorStatistics
from resident.runtime.wiring import DEFAULT_TIMEOUT
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.store import Store
from resident.store.tables import MEMORY_CONFIG
from resident.supervisor import Address, ThreadReply

if TYPE_CHECKING:
    from resident.runtime.caller import Caller
    from resident.runtime.cognition.bridge import Bridge
    from resident.runtime.engagement import Judging
    from resident.runtime.memory.admissions import Admissions
    from resident.runtime.sessions.runner import ExecutionRunner

__all__ = ["Call", "Context", "PendingWrites", "Revalidation"]


@dataclass(frozen=True, slots=True)
class Call:
    """Who calls a service, and on which member's surface (None for an operation bound to no member)."""

    caller: Caller
    member: str | None = None
    # Whether the call came over the loopback API (a path it names is on the runtime's machine, not the caller's).
    remote: bool = False


class Revalidation:
    """How long a successful check of a verified entry's dependencies counts (seconds on the runtime's clock)."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl


@dataclass(frozen=True, slots=True)
class Context:
    """The runtime's parts a service may use; see the module docstring."""

    home: Path
    store: Store
    writer: Address
    substrate: Address
    embedder: Address
    replication: Address
    coordinator: Address
    # Each running member's actor, by name (a member that joins by import is added while the runtime runs).
    members: Mapping[str, Address]
    # Members' remembers, checked and shaped in the caller's thread (`resident.runtime.memory.admissions`).
    admissions: Admissions
    clock: Clock
    # The configuration changes when a member joins by import; read it when needed, never keep it.
    config_now: Callable[[], Config]
    # Raises `RuntimeStopped` once the runtime is closed or its supervisor gave up.
    check_open: Callable[[], None]
    # A snapshot of every supervised actor.
    statistics: Callable[[], SupervisorStatistics]
    # The team skill library's search index.
    skills: Address
    # The soul.md digest and native skills each member's were last recorded from (`runtime.skills.sync_natives`).
    natives: dict[str, tuple[str, tuple[str, ...]]]
    # The judgment model engagement is decided with (`resident.runtime.engagement`).
    judging: Judging
    # The knowledge pages' index, when knowledge is on (`[knowledge] enabled` in resident.toml).
    knowledge: Address | None
    # How long a successful check of a verified entry's dependencies counts, in seconds of the clock.
    revalidation: Revalidation
    # Starts the actor of a member that just joined this home by import (name, role, worlds).
    add_member: Callable[[str, str, tuple[str, ...]], None]
    # The bridge to an independent Cognition service (`[cognition]`; off unless configured).
    cognition: Bridge
    # Runs dispatched executions' sessions in the background (`resident.runtime.sessions.runner`).
    executions: ExecutionRunner

    @property
    def config(self) -> Config:
        return self.config_now()

    def write(self, commit: Commit, timeout: float | None = None) -> Any:
        """Commit through the writer and wait until it is durable; the commit's answer."""
        self.check_open()
        return self.writer.ask(commit, timeout)

    def write_each(self, commits: Sequence[Commit], timeout: float | None = None) -> list[Exception | None]:
        """Hand several independent writes to the writer at once (they share commits), then wait for each.

        One outcome per write, in order: None when it is durable, else the error that refused it.
        A timeout is raised rather than returned: such a write may still land.
        """
        return self.send_each(commits).outcomes(timeout)

    def send_each(self, commits: Sequence[Commit]) -> PendingWrites:
        """Hand several independent writes to the writer and return at once; their outcomes come later."""
        self.check_open()
        replies = [ThreadReply(self.writer.name) for _ in commits]
        self.writer.deliver(list(zip(commits, replies, strict=True)))
        return PendingWrites(replies, self.writer.default_timeout)

    def member(self, name: str) -> Address:
        """The actor of roster member `name` (`UnknownMember` otherwise)."""
        self.check_open()
        return self.members[self.config.member(name).name]

    def ask_member(self, name: str, message: Any, timeout: float | None) -> Any:
        """`message` answered by member `name`'s actor; a timeout while the substrate is down says so."""
        try:
            return self.member(name).ask(message, timeout if timeout is not None else DEFAULT_TIMEOUT)
        except AskTimeout as error:
            raise self._explain(error) from None

    async def ask_member_async(self, name: str, message: Any, timeout: float | None) -> Any:
        """`ask_member` for asyncio callers."""
        try:
            return await self.member(name).ask_async(message, timeout if timeout is not None else DEFAULT_TIMEOUT)
        except AskTimeout as error:
            raise self._explain(error) from None

    def _explain(self, error: AskTimeout) -> Exception:
        # A member hands memory work to the substrate; a timeout while the substrate is down
        # or rebuilding is the substrate's unavailability, and the caller should hear so.
        if self.substrate.state != "running":
            return SubstrateUnavailable(
                f"the memory substrate is {self.substrate.state} (restarting or rebuilding its index) "
                f"and did not answer in time; retry shortly ({error})"
            )
        return error

    def require_memory(self) -> None:
        """`MemoryDisabled` (naming the command that turns memory on) unless memory is on."""
        with self.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        if config is None or not config.enabled:
            raise MemoryDisabled(MEMORY_OFF_MESSAGE)

class PendingWrites:
    """Writes handed to the writer whose outcomes are not collected yet."""

    def __init__(self, replies: list[ThreadReply], default_timeout: float) -> None:
        self._replies = replies
        self._default_timeout = default_timeout

    def outcomes(self, timeout: float | None = None) -> list[Exception | None]:
        """Wait for each write: None when it is durable, else the error that refused it (timeouts raise)."""
        outcomes: list[Exception | None] = []
        for reply in self._replies:
            try:
                reply.wait(self._default_timeout if timeout is None else timeout)
            except AskTimeout:
                raise
            except ResidentError as error:
                outcomes.append(error)
            else:
                outcomes.append(None)
        return outcomes
