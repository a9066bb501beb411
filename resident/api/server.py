"""`resident up`: one long-lived process running a home's runtime behind the authenticated loopback API.

Start: open the runtime (which claims the home's lock), bind the socket, and once the server accepts
connections write `api.json` (0600, atomically) and hand the same facts to `on_ready` (the CLI
prints them as one JSON line, so a host that spawned the process knows when it may connect).

It is strict with slow clients (`resident.web.strict_http`): a connection that has not sent a
request's headers within the read timeout is closed, and a body that trickles is answered 408.

Stop, on SIGTERM or SIGINT (or when the runtime's root supervisor gives up): the server stops
accepting connections and ends the event streams, in-flight requests finish (so every write a
client was told about is durable), then the actors stop in reverse start order, the store closes,
`api.json` is removed and the home's lock released. A runtime that stopped on its own is a fatal
error: `serve` raises `RuntimeStopped` after cleaning up, and the CLI exits non-zero with one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import uvicorn

from resident.api.app import MAX_IN_FLIGHT, create_app
from resident.api.discovery import DISCOVERY_FILE, Discovery, Listen, lock_holder, pid_alive, read_discovery
from resident.api.events import EventHub, HubSettings
from resident.api.wire import API_VERSION, READ_TIMEOUT
from resident.errors import HomeInUse, InvalidInput, RuntimeStopped
from resident.runtime import Runtime
from resident.store.home import ensure_home, resolve_home, write_private_file
from resident.web import ReadyServer, listen_tcp, stop_on_signals, strict_http

__all__ = ["GRACEFUL_SECONDS", "serve"]

logger = logging.getLogger(__name__)

# In-flight requests get this long to finish once a stop is asked for; then they are cancelled.
GRACEFUL_SECONDS = 30


def _bind_unix(path: Path) -> socket.socket:
    """A listening unix socket at `path`, private to its owner; a stale socket file is replaced."""
    with contextlib.suppress(FileNotFoundError):
        mode = path.lstat().st_mode
        if not stat.S_ISSOCK(mode):
            raise InvalidInput(f"--listen: {path} exists and is not a socket; choose another path")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # nobody answers on it: left behind by a process that was killed
        else:
            raise InvalidInput(f"--listen: something already listens on {path}; choose another path")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)  # the socket file is created 0600: only its owner may connect
    try:
        sock.bind(str(path))
        sock.listen(1024)
    except OSError as error:
        sock.close()
        raise InvalidInput(f"--listen: cannot listen on {path}: {error.strerror}") from error
    finally:
        os.umask(previous)
    return sock


def _bind(listen: Listen) -> tuple[socket.socket, str]:
    """The listening socket and the address clients use for it."""
    if listen.kind == "unix":
        assert listen.path is not None
        return _bind_unix(listen.path), f"unix:{listen.path}"
    sock = listen_tcp(listen.host, listen.port, "the API", host_option="--listen", port_option="--listen port")
    host, port = sock.getsockname()[:2]
    return sock, f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _open_runtime(home: Path) -> Runtime:
    try:
        return Runtime.open(home)
    except HomeInUse:
        found = read_discovery(home)
        if found is not None and pid_alive(found.pid) and lock_holder(home) == found.pid:
            raise HomeInUse(
                f"a runtime is already up for {home} at {found.address} (pid {found.pid}); "
                "use it, or stop it with `resident down`"
            ) from None
        raise


@contextlib.contextmanager
def _published(home: Path) -> Iterator[Callable[[Discovery], None]]:
    """A function that writes the discovery file; the file is removed when the block ends."""
    path = home / DISCOVERY_FILE
    written = False

    def publish(discovery: Discovery) -> None:
        nonlocal written
        write_private_file(path, msgspec.json.encode(discovery))
        written = True

    try:
        yield publish
    finally:
        if written:
            path.unlink(missing_ok=True)


def serve(
    home: str | os.PathLike[str] | None,
    listen: Listen,
    on_ready: Callable[[Discovery], None],
    *,
    hub_settings: HubSettings | None = None,
    max_in_flight: int = MAX_IN_FLIGHT,
    read_timeout: float = READ_TIMEOUT,
) -> None:
    """Run the API for `home` on `listen` until SIGTERM/SIGINT; `RuntimeStopped` if the runtime gave up.

    A client has `read_timeout` seconds to send a whole request.
    """
    if not 0 < read_timeout < float("inf"):
        raise InvalidInput(f"the read timeout must be a positive number of seconds, not {read_timeout!r}")
    path = ensure_home(resolve_home(home))
    runtime = _open_runtime(path)
    stopped: list[str] = []
    try:
        sock, address = _bind(listen)
        try:
            discovery = Discovery(
                address=address, pid=os.getpid(), token=secrets.token_urlsafe(32), api_version=API_VERSION,
                home=str(path),
            )
            with _published(path) as publish:
                _run(
                    runtime, sock, discovery, publish=publish, on_ready=on_ready, stopped=stopped,
                    hub_settings=hub_settings, max_in_flight=max_in_flight, read_timeout=read_timeout,
                )
        finally:
            sock.close()
            if listen.kind == "unix" and listen.path is not None:
                listen.path.unlink(missing_ok=True)
    finally:
        runtime.close()
    if stopped:
        raise RuntimeStopped(f"the runtime stopped ({stopped[0]}); its API was shut down — start it again")


def _run(
    runtime: Runtime,
    sock: socket.socket,
    discovery: Discovery,
    *,
    publish: Callable[[Discovery], None],
    on_ready: Callable[[Discovery], None],
    stopped: list[str],
    hub_settings: HubSettings | None,
    max_in_flight: int,
    read_timeout: float,
) -> None:
    server: ReadyServer | None = None

    def runtime_stopped(reason: str) -> None:
        stopped.append(reason)
        logger.error("the runtime stopped (%s); shutting the API down", reason)
        if server is not None:
            server.should_exit = True

    hub = EventHub(runtime, hub_settings, on_runtime_stopped=runtime_stopped)
    tasks: list[asyncio.Task[None]] = []

    def started() -> None:
        tasks.append(asyncio.get_running_loop().create_task(hub.run()))
        publish(discovery)
        on_ready(discovery)

    config = uvicorn.Config(
        create_app(runtime, discovery.token, hub, max_in_flight=max_in_flight, read_timeout=read_timeout),
        http=strict_http(read_timeout),
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    server = ReadyServer(config, on_started=started, on_stopping=hub.close)
    with stop_on_signals(server):
        server.run(sockets=[sock])
