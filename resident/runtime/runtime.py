"""The runtime facade: open a home, run its actor tree in background threads, close it cleanly.

    with Runtime.open(home) as rt:
        rt.memory.enable()
        receipt = rt.member("deven").remember("the deploy needs a migration first")
        hits = rt.member("deven").recall("deploy")

`Runtime.open` claims the home (one process at a time), opens its store, starts the supervised
actors and returns; every method is thread-safe and the `a…` twins are safe to await from any
event loop. If the root supervisor gives up, the runtime stops: later calls raise
`RuntimeStopped` with the reason, and `close()` still releases the home.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from resident.actors.replication import ReplicationSettings
from resident.clock import Clock, SystemClock
from resident.config import Config, MemberConfig, default_config, load_config, render_config
from resident.engagement.judge import Judge
from resident.errors import (
    InvalidInput,
    RuntimeStopped,
)
from resident.knowledge.revalidation import DEFAULT_TTL
from resident.memory.embedders import make_embedder
from resident.memory.embedding import Embedder
from resident.messages.store import Commit
from resident.messages.supervision import SupervisorStatistics
from resident.operations.memory import MemberSurface
from resident.operations.runtime_facade import Facade
from resident.realm.urls import realm_base_url
from resident.runtime.caller import Caller
from resident.runtime.chaos import Chaos
from resident.runtime.cognition.bridge import open_bridge
from resident.runtime.context import Context, Revalidation
from resident.runtime.coordination import resume_session
from resident.runtime.engagement import Judging
from resident.runtime.executor import LocalExecutor
from resident.runtime.heap import release_freed_heap
from resident.runtime.home import maintenance
from resident.runtime.memory.admissions import Admissions
from resident.runtime.replication import home_realm_ca, home_realm_token
from resident.runtime.sessions.runner import ExecutionRunner
from resident.runtime.wiring import Wiring, build_wiring
from resident.store.backup import rejudge_restored
from resident.store.home import (
    CONFIG_FILE,
    HomeLock,
    ensure_home,
    home_writable,
    require_home,
    resolve_home,
    write_private_file,
)
from resident.store.store import DEFAULT_MAP_SIZE, MAX_MAP_SIZE, Store
from resident.store.tables import MEMBERS
from resident.supervisor import StartChild, SupervisionTree

__all__ = ["Runtime", "host_chaos", "host_context"]

logger = logging.getLogger(__name__)


class Internals:
    """What the facade keeps to itself: the store, the actors' addresses and the raw write path.

    Neither checks visibility, withholding or grants, so they are not part of the public API;
    the facade's own modules, tests and benchmarks reach them through `Runtime._internal`.
    """

    def __init__(self, runtime: Runtime, store: Store, wiring: Wiring) -> None:
        self._runtime = runtime
        self.store = store
        # The actors' addresses, the writer's and the store's among them: asking them directly skips the facade.
        self.wiring = wiring
        # Members' remembers, checked and shaped in the caller's thread (`resident.runtime.memory.admissions`).
        self.admissions = Admissions(
            store, wiring.writer, runtime._clock, lambda: runtime._config, runtime._check_open
        )
        # Crash an actor by name on purpose: fault tests and the planned crashes of `resident run`.
        self.chaos = Chaos(wiring.addresses)

    @property
    def clock(self) -> Clock:
        """The clock the actors run on (a test's `ManualClock`, else the system's)."""
        return self._runtime._clock

    @property
    def config(self) -> Config:
        """The home's configuration as the runtime runs it (`resident.toml`, imported members, the Realm URL)."""
        return self._runtime._config

    def check_open(self) -> None:
        """Refuse with `RuntimeStopped` once the runtime is closed or its root supervisor gave up."""
        self._runtime._check_open()

    def add_member(self, name: str, role: str, worlds: tuple[str, ...]) -> None:
        """Start the actor of a member that just joined this home (by import)."""
        self._runtime._add_member(name, role, worlds)

    def use_judge(self, judge: Judge) -> None:
        """Decide engagement with `judge` from now on (a judgment model is Python code of this process)."""
        self._runtime._services.judging.judge = judge

    def write(self, commit: Commit, timeout: float | None = None) -> Any:
        """Commit events through the writer and wait for durability."""
        self._runtime._check_open()
        return self._runtime._internal.wiring.writer.ask(commit, timeout)

    def write_each(self, commits: Sequence[Commit], timeout: float | None = None) -> list[Exception | None]:
        return self._runtime._services.write_each(commits, timeout)

class Runtime(Facade):
    """One open home and its running actor tree."""

    def __init__(
        self,
        *,
        home: Path,
        lock: HomeLock | None,
        store: Store,
        config: Config,
        clock: Clock,
        owns_clock: bool,
        wiring: Wiring,
    ) -> None:
        self.home = home
        self._config = config
        self._clock = clock
        self._stopped = ""
        self._closed = False
        self._internal = Internals(self, store, wiring)
        self._lock = lock
        self._owns_clock = owns_clock
        self._tree = SupervisionTree(wiring.spec, clock, self._escalated)
        self._close_lock = threading.Lock()
        # What the services use; the capabilities not yet declared as operations reach it here too.
        self._services = self._context(store, wiring)
        self._services.executions.bind(self._services)
        # The executor of this process's surfaces; the API server runs each request through it too.
        self._local = LocalExecutor(self._services, self._session_caller)
        super().__init__(self._local)

    def _context(self, store: Store, wiring: Wiring) -> Context:
        return Context(
            home=self.home, store=store, writer=wiring.writer, substrate=wiring.substrate,
            embedder=wiring.embedder, replication=wiring.replication, coordinator=wiring.coordinator,
            members=wiring.members, admissions=self._internal.admissions, clock=self._clock,
            config_now=lambda: self._config, check_open=self._check_open, statistics=self._tree_statistics,
            skills=wiring.skills, natives={}, judging=Judging(), knowledge=wiring.knowledge,
            revalidation=Revalidation(DEFAULT_TTL),
            add_member=self._add_member, executions=ExecutionRunner(),
            cognition=open_bridge(self.home, self._config.cognition, self._clock),
        )

    def _tree_statistics(self) -> SupervisorStatistics:
        return self._tree.statistics()

    def _session_caller(self, token: str) -> Caller:
        return Caller(resume_session(self._services, token))

    # -- opening and closing ----------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        home: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        embedder_factory: Callable[[str], Embedder] | None = None,
        map_size: int = DEFAULT_MAP_SIZE,
        max_map_size: int = MAX_MAP_SIZE,
        realm: str | None = None,
        realm_token: str | None = None,
        realm_ca: str | None = None,
        replication: ReplicationSettings | None = None,
        create: bool = True,
        lock: HomeLock | None = None,
    ) -> Self:
        """Open `home` (else `$RESIDENT_HOME`, else the user data dir) and start the actors.

        `realm` overrides the Realm URL of `resident.toml` (`"none"` turns replication off for
        this run) and `realm_token` the token the home presents to it (else
        `$RESIDENT_REALM_TOKEN`, else `<home>/realm.token`); `realm_ca` the only CAs trusted for
        Realm's certificate (else `$RESIDENT_REALM_CA`, else `[realm] ca_file`, else the system's);
        `replication` tunes batch sizes,
        attempts and backoff. The store's map starts at `map_size` bytes and grows up to
        `max_map_size` (past it, writes are refused as `MapFull`). With `create=False` the home
        must already hold a store (`HomeNotFound` otherwise). A home this process may not write
        opens for reading: writes are refused with `HomeReadOnly`. `lock` is a claim on the home
        the caller already holds (and keeps: the runtime leaves it to the caller to release).
        """
        path = resolve_home(home)
        path = ensure_home(path) if create else require_home(path)
        writable = home_writable(path)
        owns_lock = lock is None
        if lock is None:
            lock = HomeLock(path, shared=not writable)
            lock.acquire()
        store: Store | None = None
        owns_clock = clock is None
        active_clock: Clock = clock if clock is not None else SystemClock()
        try:
            if create and writable and not (path / CONFIG_FILE).exists():
                # A home any command creates (`memory enable`, `remember`) gets the resident.toml
                # `init` would write, so it is a whole home that says what it runs with.
                write_private_file(path / CONFIG_FILE, render_config(default_config(path / CONFIG_FILE)).encode())
            store = Store.open(path, map_size=map_size, max_map_size=max_map_size, readonly=not writable)
            if not store.readonly:
                rejudge_restored(store, active_clock.time())
            config = load_config(path / CONFIG_FILE)
            with store.reader() as reader:
                imported = [MemberConfig(e.name, e.role, e.worlds) for _, e in reader.items(MEMBERS)]
            config = config.with_imported(imported)
            realm_url = config.realm_url if realm is None else (None if realm == "none" else realm_base_url(realm))
            config = config.with_realm(realm_url)
            token = home_realm_token(path, realm_token) if realm_url is not None else None
            ca_file = home_realm_ca(path, config.realm_ca_file, realm_ca) if realm_url is not None else None
            wiring = build_wiring(
                store, config, embedder_factory or make_embedder, realm_url, replication, realm_token=token, home=path,
                realm_ca=ca_file,
            )
            runtime = cls(
                home=path, lock=lock if owns_lock else None, store=store, config=config, clock=active_clock,
                owns_clock=owns_clock, wiring=wiring,
            )
            runtime._tree.start()
            # At connect the bridge asks the service what it offers (within its deadline; a service not up yet is
            # asked again at first use).
            runtime._services.cognition.connect()
            runtime._services.executions.start()
            # The substrate's rebuild freed its temporaries: give that heap back (`heap.py`).
            release_freed_heap()
        except BaseException:
            damage = store.damage() if store is not None else None
            if store is not None:
                store.close()
            if owns_lock:
                lock.release()
            if owns_clock and isinstance(active_clock, SystemClock):
                active_clock.close()
            if damage is not None:
                # An actor that read a damaged page failed to start; the damage is the cause to name.
                raise damage from None
            raise
        return runtime

    def close(self, timeout: float = 30.0) -> None:
        """Stop every actor (reverse start order), close the store and release the home."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._services.executions.close()
            self._tree.stop(timeout=timeout)
        finally:
            for address in self._internal.wiring.addresses.values():
                address.close("the runtime is closed", RuntimeStopped)
            self._services.cognition.close()
            self._internal.store.close()
            if self._lock is not None:
                self._lock.release()
            if self._owns_clock and isinstance(self._clock, SystemClock):
                self._clock.close()

    async def aclose(self) -> None:
        """`close`, from an event loop: the actors stop in a worker thread so the loop keeps running."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _escalated(self, reason: str) -> None:
        self._stopped = reason
        logger.error("the runtime stopped because its root supervisor gave up: %s", reason)
        for address in self._internal.wiring.addresses.values():
            address.close(f"the runtime stopped: {reason}", RuntimeStopped)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeStopped("the runtime is closed; open it again with Runtime.open()")
        if self._stopped:
            raise RuntimeStopped(f"the runtime stopped ({self._stopped}); close it and open it again")

    # -- surfaces ---------------------------------------------------------------------------------

    def member(self, name: str) -> MemberSurface:
        """The memory surface of one member of the roster (`UnknownMember` otherwise)."""
        return super().member(self._config.member(name).name)

    def _add_member(self, name: str, role: str, worlds: tuple[str, ...]) -> None:
        self._check_open()
        if name in self._internal.wiring.members:
            raise InvalidInput(f"member {name} is already running in this home")
        member = MemberConfig(name, role, worlds)
        spec = self._internal.wiring.member_spec(member)
        try:
            self._internal.wiring.addresses["members"].ask(StartChild(spec), timeout=30.0)
        except BaseException:
            self._internal.wiring.forget_member(name)
            raise
        self._config = self._config.with_imported([*self._config.extra_members, member])

    # -- maintenance of a closed home: the same functions on both sides (`resident.runtime.home.maintenance`) ---------

    restore = staticmethod(maintenance.restore)
    doctor = staticmethod(maintenance.doctor)
    salvage = staticmethod(maintenance.salvage)


def host_context(runtime: Runtime) -> Context:
    """The explicit parts of an open runtime, for a surface that hosts it in this process.

    The API server's event stream, `resident run`'s checks and the write benchmark read the store and the
    clock of the runtime they run: they take the same `Context` a service takes, not the runtime's internals.
    """
    return runtime._services


def host_chaos(runtime: Runtime) -> Chaos:
    """Crash an actor of `runtime` by name on purpose (the planned crashes of `resident run`)."""
    return runtime._internal.chaos
