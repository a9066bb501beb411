"""The `resident` command's client of a running `resident up`: one blocking request per call.

A command makes one or two requests and exits, so it needs no connection pool, no keep-alive and no
asyncio: each call opens a connection (TCP on loopback, or the unix socket), sends one request with
the standard library's `http.client`, reads the whole answer and closes. That is what makes a
command quick to start: importing httpx (which `Runtime.connect` uses for long-lived hosts) costs
about 75 ms more than `http.client` on the 2-core machine of bench/RESULTS.md, half the budget of a
whole `resident recall` (see bench/cli.py). Requests and answers are read through `exchange`, as
the Python client reads them.

Light on purpose: the standard library, msgspec and the message structs only.
"""

from __future__ import annotations

import http.client
import socket
from typing import Any
from urllib.parse import urlsplit

from resident.api import routes
from resident.api.discovery import Discovery
from resident.api.exchange import Request, auth_headers, decode_answer, unreachable

__all__ = ["DEFAULT_TIMEOUT", "OneShot"]

# The runtime's own asks wait up to 30 s; the answer gets a little longer to come back.
DEFAULT_TIMEOUT = 45.0


class _UnixConnection(http.client.HTTPConnection):
    """An HTTP connection over a unix socket (`resident up --listen unix:PATH`)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class OneShot:
    """Operations on the runtime a discovery file names, each its own request; `grant` acts as a member session."""

    def __init__(self, discovery: Discovery, grant: str | None = None) -> None:
        self.discovery = discovery
        self._headers = auth_headers(discovery, grant)

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        path = self.discovery.unix_path
        if path is not None:
            return _UnixConnection(path, timeout)
        address = urlsplit(self.discovery.address)
        return http.client.HTTPConnection(address.hostname or "", address.port, timeout=timeout)

    def call(self, op: routes.Operation, body: Any = None, *, timeout: float | None = None, **params: str) -> Any:
        """Run `op` and return its answer struct, or raise the error it answered."""
        request = Request.of(op, body, params)
        connection = self._connection(DEFAULT_TIMEOUT if timeout is None else timeout)
        try:
            connection.request(
                request.method, request.path, body=request.content, headers={**self._headers, **request.headers}
            )
            response = connection.getresponse()
            content = response.read()
        except (OSError, http.client.HTTPException) as error:
            raise unreachable(self.discovery, error) from None
        finally:
            connection.close()
        return decode_answer(op, response.status, content)
