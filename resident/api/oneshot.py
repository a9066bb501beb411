"""The `resident` command's client of a running `resident up`: one blocking request per connection.

A command makes one or two requests and exits, so it needs no pool, no keep-alive, no TLS, proxies,
redirects or cookies: each call connects (TCP on loopback, or the unix socket), sends one HTTP/1.1
request with `Connection: close`, reads the answer to its `Content-Length` (or to the close) and
disconnects. Before the first request carries the token, `challenge.prove_server` makes sure the
address is the home's runtime. The server is this project's own (`resident.api.app` under uvicorn), which frames every
answer with a `Content-Length`. That is what makes a command quick to start: httpx (which
`Runtime.connect` uses for long-lived hosts) costs about 75 ms to import on the 2-core machine of
bench/RESULTS.md and the standard library's `http.client` about 20 ms (it brings `email` and `ssl`),
against a budget of 150 ms for a whole `resident recall` (bench/cli.py). Requests and answers are
built and read through `exchange`, as the Python client builds and reads them.

Light on purpose: the standard library's sockets, msgspec and the message structs only.
"""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlencode, urlsplit

from resident.api.challenge import prove_server
from resident.api.discovery import Discovery
from resident.api.exchange import Request, auth_headers, decode_reply, unreachable
from resident.errors import RuntimeNotUp
from resident.operations.declaration import Operation
from resident.operations.wire import encode

__all__ = ["DEFAULT_TIMEOUT", "OneShot"]

# The runtime's own asks wait up to 30 s; the answer gets a little longer to come back.
DEFAULT_TIMEOUT = 45.0
_CHUNK = 256 * 1024
# How much longer than a call's own timeout its request may take: the trip there and back.
_MARGIN = 15.0


class OneShot:
    """Operations on the runtime a discovery file names, each its own request; `grant` acts as a member session."""

    def __init__(self, discovery: Discovery, grant: str | None = None) -> None:
        self.discovery = discovery
        headers = auth_headers(discovery, grant)
        for value in headers.values():
            # A discovery file is input: a token that could break a header line is not sent at all.
            if not value.isascii() or not value.isprintable():
                raise RuntimeNotUp(
                    f"{discovery.home}'s api.json holds a token `resident up` never writes; start it again"
                )
        self._headers = headers
        address = urlsplit(discovery.address)
        self._host = address.netloc or "localhost"
        try:
            self._tcp = None if discovery.unix_path is not None else (address.hostname or "", address.port or 80)
        except ValueError:  # a port that is not a number
            raise RuntimeNotUp(
                f"{discovery.home}'s api.json names {discovery.address!r}, an address `resident up` never writes; "
                "start it again"
            ) from None
        # Nothing secret goes to the address until the process there proves it holds the home's token.
        prove_server(discovery, session=discovery.session)

    def run(self, op: Operation[Any, Any, Any], request: Any, member: str | None = None) -> Any:
        """Run a declared operation's `request` (on `member`'s surface); its reply struct, or its typed error."""
        encoded = encode(op, request, member)
        path = encoded.path if not encoded.query else f"{encoded.path}?{urlencode(encoded.query)}"
        headers = {} if encoded.body is None else {"Content-Type": "application/json"}
        timeout = getattr(request, "timeout", None)
        wait = (op.route.wait or DEFAULT_TIMEOUT) if timeout is None else float(timeout) + _MARGIN
        try:
            status, content = self._exchange(Request(encoded.method, path, encoded.body, headers), wait)
        except (OSError, ValueError) as error:
            raise unreachable(self.discovery, error) from None
        return decode_reply(op.reply, status, content, op.name)

    def _connect(self, timeout: float) -> socket.socket:
        if self._tcp is not None:
            host, port = self._tcp
            # As bytes: a host given as text goes through the idna codec first, which costs a few ms to load.
            # CPython takes the host as bytes too (typeshed knows only text).
            return socket.create_connection((host.encode("ascii"), port), timeout=timeout)  # type: ignore[arg-type]
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(self.discovery.unix_path or "")
        except OSError:
            sock.close()
            raise
        return sock

    def _exchange(self, request: Request, timeout: float) -> tuple[int, bytes]:
        content = request.content or b""
        lines = [f"{request.method} {request.path} HTTP/1.1", f"Host: {self._host}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in {**self._headers, **request.headers}.items()]
        if request.content is not None:
            lines.append(f"Content-Length: {len(content)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
        with self._connect(timeout) as sock:
            sock.sendall(head + content)
            return _read_answer(sock)


def _read_answer(sock: socket.socket) -> tuple[int, bytes]:
    """The status and body of the answer on `sock`: to its Content-Length, or to the close."""
    received = bytearray()
    head_end = -1
    length: int | None = None
    while True:
        if head_end < 0:
            head_end = received.find(b"\r\n\r\n")
            if head_end >= 0:
                length = _content_length(bytes(received[:head_end]))
        if length is not None and len(received) - head_end - 4 >= length:
            break
        chunk = sock.recv(_CHUNK)
        if not chunk:
            break
        received += chunk
    if head_end < 0 or (length is not None and len(received) - head_end - 4 < length):
        raise ValueError("the answer was cut short")
    status_line = bytes(received[: received.find(b"\r\n")]).split()
    if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/1.") or not status_line[1].isdigit():
        raise ValueError(f"the answer does not start like an HTTP answer: {bytes(received[:40])!r}")
    body = bytes(received[head_end + 4 :])
    return int(status_line[1]), body if length is None else body[:length]


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value.strip())
    return None
