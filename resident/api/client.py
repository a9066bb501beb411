"""`Runtime.connect(home)`: the runtime a `resident up` process serves, used from Python like `Runtime.open`.

    with Runtime.connect("~/team") as rt:
        deven = rt.member("deven")
        receipt = deven.remember("the staging deploy needs the migration first")
        hits = await deven.arecall("deploy order")
        for item in rt.events():          # live: writes, replication, progress, actor crashes
            ...

The surfaces mirror the in-process facade: `rt.memory` (enable, disable, status), `rt.member(name)`
(remember, recall, get, forget, reconcile, each with its awaitable twin), `rt.replication` (status,
sync), `rt.coordinator` (progress, correct), `rt.reconcile`, `rt.statistics()`. They take the same
arguments, return the same structs and raise the same typed errors, checked by the server.
Differences: `sync` waits at most 120 s per call; coordination sessions (dispatch, grant tokens)
stay in the process that runs them; closing a connected runtime closes the connection, not the
runtime (stop that with `resident down`).

Importing this module loads httpx and msgspec, not the runtime, numpy or LMDB.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import TracebackType

from resident.api.discovery import DISCOVERY_FILE, check_version, pid_alive, read_discovery
from resident.api.remote import RemoteExecutor
from resident.api.transport import StreamItem, Transport
from resident.errors import RuntimeNotUp, UnknownMember
from resident.messages.backup import BackupManifest
from resident.messages.store import DoctorReport, SalvageReport
from resident.operations.memory import MemberSurface
from resident.operations.runtime_facade import Facade

__all__ = ["RemoteRuntime", "StreamItem", "connect"]


def _wait(timeout: float | None) -> float | None:
    # How long the HTTP request may take: the caller's ask timeout plus the trip back.
    return None if timeout is None else timeout + 5.0




class RemoteRuntime(Facade):
    """The runtime of a home as a `resident up` process serves it; see the module docstring."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        executor = RemoteExecutor(transport)
        super().__init__(executor)
        self.home = Path(transport.discovery.home)
        self.address = transport.discovery.address
        self._roster: frozenset[str] = frozenset()

    @classmethod
    def connect(cls, home: str | os.PathLike[str] | None = None) -> RemoteRuntime:
        """Connect to the runtime up for `home` (else `$RESIDENT_HOME`, else the user data dir).

        `RuntimeNotUp` when none is (no discovery file, or its process is gone), `Unauthorized` when
        its token is refused.
        """
        path = _resolve(home)
        found = read_discovery(path)
        if found is None:
            raise RuntimeNotUp(f"no runtime is up for {path} (no {DISCOVERY_FILE}); start one with `resident up`")
        if not pid_alive(found.pid):
            raise RuntimeNotUp(
                f"the runtime recorded in {path / DISCOVERY_FILE} (pid {found.pid}) is gone; start it again with "
                "`resident up`"
            )
        runtime = cls(Transport(check_version(found)))
        try:
            runtime.members()  # proves the address and the token at once
        except BaseException:
            runtime.close()
            raise
        return runtime

    # -- surfaces ---------------------------------------------------------------------------------

    def member(self, name: str) -> MemberSurface:
        """The memory surface of one member of the roster (`UnknownMember` otherwise)."""
        if name not in self._roster:
            self._roster = frozenset(member.name for member in self.members())
            if name not in self._roster:
                known = ", ".join(sorted(self._roster))
                raise UnknownMember(f"no member named {name!r}; the roster is: {known}")
        return super().member(name)

    def events(self, last_event_id: str | None = None, *, from_now: bool = False) -> Iterator[StreamItem]:
        """The live event stream (from the beginning, or after `last_event_id`); see `resident.api.events`.

        `from_now` replays nothing: the first item is `stream.started`, whose id is the current position.
        """
        return self._transport.events(last_event_id, from_now=from_now)

    def aevents(self, last_event_id: str | None = None, *, from_now: bool = False) -> AsyncIterator[StreamItem]:
        return self._transport.aevents(last_event_id, from_now=from_now)

    # -- maintenance of a closed home: the in-process runtime's own functions (`resident.runtime.home.maintenance`) --

    @staticmethod
    def restore(src: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> BackupManifest:
        """Verify the backup at `src`, then switch `home` to it atomically (the home must be closed)."""
        from resident.runtime.home import maintenance  # noqa: PLC0415 - the client stays light until asked

        return maintenance.restore(src, home)

    @staticmethod
    def doctor(home: str | os.PathLike[str] | None = None) -> DoctorReport:
        """Check a closed home whole: configuration, structure, tables, event log, record digests."""
        from resident.runtime.home import maintenance  # noqa: PLC0415 - the client stays light until asked

        return maintenance.doctor(home)

    @staticmethod
    def salvage(dest: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> SalvageReport:
        """Copy every record (and row) of a closed, damaged home that still reads and verifies into `dest`."""
        from resident.runtime.home import maintenance  # noqa: PLC0415 - the client stays light until asked

        return maintenance.salvage(dest, home)

    # -- closing ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (the runtime keeps running; `resident down` stops it)."""
        self._transport.close()

    async def aclose(self) -> None:
        """Close the connection, including this event loop's async client."""
        await self._transport.aclose()
        self._transport.close()

    def __enter__(self) -> RemoteRuntime:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> RemoteRuntime:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _resolve(home: str | os.PathLike[str] | None) -> Path:
    if home is not None and str(home) != "":
        return Path(home).expanduser().absolute()
    # The default home needs platformdirs' answer, which lives with the store's home rules.
    from resident.store.home import resolve_home  # noqa: PLC0415 - only for the default home

    return resolve_home(None)


def connect(home: str | os.PathLike[str] | None = None) -> RemoteRuntime:
    """The runtime `resident up` serves for `home`; see `RemoteRuntime.connect`."""
    return RemoteRuntime.connect(home)

