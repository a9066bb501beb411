"""A real `resident up` process for tests, and a raw HTTP client pointed at it.

The process is the product's own command (`python -m resident.cli --home H up`); it is ready once it
printed its JSON line, which carries the address and the token. Its standard error goes to a log
beside the home, shown when a test fails. Every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import msgspec

from resident.api.discovery import Discovery
from resident.api.process import read_first_line

__all__ = ["START_TIMEOUT", "STOP_TIMEOUT", "UpProcess", "post_once", "raw_client"]

START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0


class UpProcess:
    """One `resident up` over `home`; `discovery` is valid once `start()` returned."""

    def __init__(self, home: Path, *extra: str, listen: str = "127.0.0.1:0") -> None:
        self.home = home
        self.listen = listen
        self.extra = extra
        self.log_file = home.with_name(f"{home.name}.up.log")
        self.discovery: Discovery | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.first_line = b""

    def start(self) -> Discovery:
        env = {k: v for k, v in os.environ.items() if k not in ("RESIDENT_DEBUG", "RESIDENT_HOME")}
        command = [sys.executable, "-m", "resident.cli", "--home", str(self.home), "up", "--listen", self.listen]
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(
                [*command, *self.extra], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env
            )
        assert self.proc.stdout is not None
        self.first_line = read_first_line(self.proc.stdout.fileno(), START_TIMEOUT)
        if not self.first_line:
            self.kill()
            raise AssertionError(f"resident up did not announce itself; log:\n{self.log_tail()}")
        self.discovery = msgspec.json.decode(self.first_line, type=Discovery)
        return self.discovery

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def url(self) -> str:
        assert self.discovery is not None
        return self.discovery.base_url

    @property
    def headers(self) -> dict[str, str]:
        assert self.discovery is not None
        return {"Authorization": f"Bearer {self.discovery.token}"}

    def terminate(self, sig: int = signal.SIGTERM) -> int:
        """Signal the process and wait (bounded) for it to exit; returns its exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT)
        finally:
            self._close_pipe()

    def kill(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait(timeout=STOP_TIMEOUT)
        self._close_pipe()
        return code

    def _close_pipe(self) -> None:
        if self.proc is not None and self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def client(self, **options: Any) -> httpx.Client:
        """A plain HTTP client for this server, with the token unless `headers` says otherwise."""
        assert self.discovery is not None
        options.setdefault("headers", self.headers)
        transport = None if self.discovery.unix_path is None else httpx.HTTPTransport(uds=self.discovery.unix_path)
        return httpx.Client(base_url=self.url, transport=transport, timeout=30.0, trust_env=False, **options)

    def __enter__(self) -> UpProcess:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.terminate()


def raw_client(up: UpProcess) -> httpx.Client:
    """A client that sends no token."""
    return up.client(headers={})


async def post_once(discovery: Discovery, path: str, body: Any) -> tuple[int, Any]:
    """One POST on its own connection, with a minimal HTTP/1.1 client (status and decoded body).

    httpx's async pool costs milliseconds of client CPU per request once it holds many connections;
    this keeps a test's load on the server, where it belongs. Connection failures raise `OSError`
    (or `asyncio.IncompleteReadError`).
    """
    host, port = discovery.address.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {discovery.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + payload)
        await writer.drain()
        answer = await reader.read()
    finally:
        writer.close()
    if not answer:
        raise ConnectionResetError("the server closed the connection without answering")
    status_line, _, rest = answer.partition(b"\r\n")
    _, _, content = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), json.loads(content)
