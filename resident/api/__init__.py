"""The runtime over loopback HTTP: `resident up` serves it, `Runtime.connect` (or `connect`) uses it.

Light modules (importable without the runtime, numpy or LMDB): `wire` (bodies), `routes` (the
operation table), `statuses` (errors to HTTP and back), `discovery` (api.json), `transport` and
`client` (the Python client), `process` (detach and stop). The server side — `app`, `handlers`,
`events`, `openapi`, `server` — imports the runtime and the ASGI stack.
"""

from resident.api.client import RemoteMember, RemoteRuntime, StreamItem, connect

__all__ = ["RemoteMember", "RemoteRuntime", "StreamItem", "connect"]
