"""The runtime over loopback HTTP: `resident up` serves it, `Runtime.connect` (or `connect`) uses it.

Every route is a declared operation (`resident.operations`). Light modules (importable without the
runtime, numpy or LMDB): `wire` (the grant header, events and error bodies), `statuses` (errors to
HTTP and back), `discovery` (api.json), `exchange` (requests and answers of an operation), `oneshot`
(one blocking request, for the `resident` command), `remote`, `transport` and `client` (the Python
client, over httpx), `process` (detach and stop). The server side — `app`, `inprocess`, `events`,
`openapi`, `server` — imports the runtime and the ASGI stack.

The client's names below are loaded on first use, so that the light modules do not bring httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resident.api.client import RemoteRuntime, StreamItem, connect

__all__ = ["RemoteRuntime", "StreamItem", "connect"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from resident.api import client  # noqa: PLC0415 - httpx only when the client is used

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
