"""`resident.Runtime`: a home's runtime opened in this process, or the one a `resident up` serves, connected to.

    with Runtime.open("~/team") as rt:        # the actor tree runs in this process
        ...
    with Runtime.connect("~/team") as rt:     # the same API, over the loopback API of `resident up`
        ...

Both offer the same surfaces, derived from the same declared operations (`resident.operations`); this module
only joins the in-process runtime (`resident.runtime`) and the client (`resident.api.client`), which know
nothing of each other.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from resident.runtime.runtime import Runtime as InProcessRuntime
from resident.runtime.runtime import host_context

if TYPE_CHECKING:
    from resident.api.client import RemoteRuntime
    from resident.api.transport import StreamItem

__all__ = ["RemoteRuntime", "Runtime"]


class Runtime(InProcessRuntime):
    """One open home and its running actor tree (`open`), or a connection to one (`connect`)."""

    @classmethod
    def connect(cls, home: str | os.PathLike[str] | None = None) -> RemoteRuntime:
        """The runtime a `resident up` process serves for `home`, over its loopback API.

        The same surfaces as `open`, with the same typed errors; `RuntimeNotUp` when no runtime is up
        for the home.
        """
        # The HTTP client (httpx) and the event stream (starlette's SSE) load only when used: a home
        # opened in this process needs neither (about 20 MB and half a second at import).
        from resident.api.client import RemoteRuntime  # noqa: PLC0415 - loaded on first use, see above

        return RemoteRuntime.connect(home)

    def events(self, last_event_id: str | None = None, *, from_now: bool = False) -> Iterator[StreamItem]:
        """The live event stream (from the beginning, or after `last_event_id`); see `resident.api.events`.

        `from_now` replays nothing: the first item is `stream.started`, whose id is the current position. The
        same items and ids as `Runtime.connect`'s stream; it ends when this runtime is closed.
        """
        from resident.api.local_stream import local_events  # noqa: PLC0415 - loaded on first use, see `connect`

        return local_events(host_context(self), last_event_id, from_now=from_now)

    def aevents(self, last_event_id: str | None = None, *, from_now: bool = False) -> AsyncIterator[StreamItem]:
        from resident.api.local_stream import alocal_events  # noqa: PLC0415 - loaded on first use, see `connect`

        return alocal_events(host_context(self), last_event_id, from_now=from_now)


def __getattr__(name: str) -> Any:
    if name == "RemoteRuntime":
        from resident.api.client import RemoteRuntime  # noqa: PLC0415 - loaded on first use, see `connect`

        return RemoteRuntime
    raise AttributeError(f"module 'resident.facade' has no attribute {name!r}")
