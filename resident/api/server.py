"""Serving a home's runtime behind the authenticated loopback API: `resident up`, and `resident run` while it runs.

`serve` is `resident up`: it opens the runtime and serves it in this thread until a signal.
`serving` serves a runtime the caller already has open, on a thread of its own, for the length of a
`with` block (`resident run` plays its plan meanwhile). Both bind, publish and stop the same way:

Start: open the runtime (which claims the home's lock), bind the socket, and once the server accepts
connections write `api.json` (0600, atomically) and hand the same facts to `on_ready` (the CLI
prints them as one JSON line, so a host that spawned the process knows when it may connect).

It is strict with slow clients (`resident.web.strict_http`): a connection that has not sent a
request's headers within the read timeout is closed, and a body that trickles is answered 408.

Stop, on SIGTERM or SIGINT for `serve`, at the end of the block for `serving` (or when the runtime's
root supervisor gives up): the server stops accepting connections and ends the event streams,
in-flight requests finish (so every write a client was told about is durable), `api.json` is
removed, then the actors stop in reverse start order, the store closes and the home's lock is
released (`serving`'s caller does that part). A runtime that stopped on its own is a fatal error
for `serve`: it raises `RuntimeStopped` after cleaning up, and the CLI exits non-zero with one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import uvicorn

from resident.api.app import MAX_IN_FLIGHT, create_app
from resident.api.challenge import PROOF_KEY_ENV, session_proof_key
from resident.api.discovery import (
    API_ADDRESS_ENV,
    DISCOVERY_FILE,
    Discovery,
    Listen,
    lock_holder,
    pid_alive,
    read_discovery,
)
from resident.api.events import EventHub, HubSettings
from resident.api.wire import READ_TIMEOUT
from resident.children.orphans import process_start
from resident.errors import HomeInUse, InvalidInput, RuntimeNotUp, RuntimeStopped
from resident.messages.home_calls import API_VERSION
from resident.runtime import Runtime
from resident.runtime.runtime import host_context
from resident.store.home import ensure_home, resolve_home, write_private_file
from resident.web import ReadyServer, listen_tcp, stop_on_signals, strict_http

__all__ = ["GRACEFUL_SECONDS", "serve", "serving"]

logger = logging.getLogger(__name__)

# In-flight requests get this long to finish once a stop is asked for; then they are cancelled.
GRACEFUL_SECONDS = 30
# Where a runtime served beside other work (`resident run`) listens: a free loopback port.
_EPHEMERAL = Listen("tcp", host="127.0.0.1", port=0)


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
def _endpoint(home: Path, listen: Listen) -> Iterator[tuple[socket.socket, Discovery, Callable[[], None]]]:
    """The listening socket, the facts to publish, and a function that publishes them as `api.json`.

    When the block ends the discovery file (if it was published) is removed and the socket closed.
    """
    sock, address = _bind(listen)
    discovery = Discovery(
        address=address, pid=os.getpid(), token=secrets.token_urlsafe(32), api_version=API_VERSION, home=str(home),
        started=process_start(os.getpid()),
    )
    path = home / DISCOVERY_FILE
    written = False

    def publish() -> None:
        nonlocal written
        write_private_file(path, msgspec.json.encode(discovery))
        written = True

    try:
        yield sock, discovery, publish
    finally:
        if written:
            path.unlink(missing_ok=True)
        sock.close()
        if listen.kind == "unix" and listen.path is not None:
            listen.path.unlink(missing_ok=True)


def _check_read_timeout(read_timeout: float) -> None:
    if not 0 < read_timeout < float("inf"):
        raise InvalidInput(f"the read timeout must be a positive number of seconds, not {read_timeout!r}")


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
    _check_read_timeout(read_timeout)
    path = ensure_home(resolve_home(home))
    runtime = _open_runtime(path)
    stopped: list[str] = []
    try:
        with _endpoint(path, listen) as (sock, discovery, publish):
            server = _server(
                runtime, discovery, publish=publish, on_ready=on_ready, stopped=stopped,
                hub_settings=hub_settings, max_in_flight=max_in_flight, read_timeout=read_timeout,
            )
            with stop_on_signals(server):
                server.run(sockets=[sock])
    finally:
        runtime.close()
    if stopped:
        raise RuntimeStopped(f"the runtime stopped ({stopped[0]}); its API was shut down — start it again")


@contextlib.contextmanager
def serving(
    runtime: Runtime,
    listen: Listen = _EPHEMERAL,
    *,
    hub_settings: HubSettings | None = None,
    max_in_flight: int = MAX_IN_FLIGHT,
    read_timeout: float = READ_TIMEOUT,
) -> Iterator[Discovery]:
    """Serve the API of an open `runtime` (as `up` does) on a thread of its own while the block runs.

    The server runs its own event loop beside the caller's; the block starts once it accepts
    connections and `api.json` is published, so every `resident` command on the home talks to it
    from then on. When the block ends, however it ends (an exception, Ctrl-C, SIGTERM raised in the
    main thread), the server stops as `up` stops — requests in flight finish — and `api.json` is
    removed, before the caller closes the runtime. The caller's signal handlers are left alone.
    """
    _check_read_timeout(read_timeout)
    stopped: list[str] = []
    with _endpoint(runtime.home, listen) as (sock, discovery, publish):
        ready = threading.Event()
        server = _server(
            runtime, discovery, publish=publish, on_ready=lambda _: ready.set(), stopped=stopped,
            hub_settings=hub_settings, max_in_flight=max_in_flight, read_timeout=read_timeout,
        )
        failed: list[BaseException] = []

        def work() -> None:
            try:
                server.run(sockets=[sock])
            except Exception as error:  # noqa: BLE001 - handed to the caller's thread, which raises it
                failed.append(error)
            finally:
                ready.set()  # a server that never started must not leave the caller waiting

        thread = threading.Thread(target=work, name=f"resident-api-{discovery.address}", daemon=True)
        thread.start()
        try:
            ready.wait()
            if failed:
                raise failed[0]
            if not server.started:
                raise RuntimeNotUp(f"the API for {runtime.home} did not start; see the log above")
            yield discovery
        finally:
            server.should_exit = True
            thread.join()


def _callback(discovery: Discovery, session: str) -> dict[str, str]:
    """How a member session's harness reaches this server without api.json (nothing over a unix socket)."""
    if discovery.unix_path is not None:
        return {API_ADDRESS_ENV: "", PROOF_KEY_ENV: ""}
    return {API_ADDRESS_ENV: discovery.address, PROOF_KEY_ENV: session_proof_key(discovery.token, session)}


def _server(
    runtime: Runtime,
    discovery: Discovery,
    *,
    publish: Callable[[], None],
    on_ready: Callable[[Discovery], None],
    stopped: list[str],
    hub_settings: HubSettings | None,
    max_in_flight: int,
    read_timeout: float,
) -> ReadyServer:
    """The server of the API for `runtime`: it publishes `discovery` once it accepts connections.

    If the runtime's root supervisor gives up, the reason goes into `stopped` and the server stops.
    """
    server: ReadyServer | None = None

    def runtime_stopped(reason: str) -> None:
        stopped.append(reason)
        logger.error("the runtime stopped (%s); shutting the API down", reason)
        if server is not None:
            server.should_exit = True

    hub = EventHub(host_context(runtime), hub_settings, on_runtime_stopped=runtime_stopped)
    # The harnesses the runtime runs in the background are told this server's address and their session's proof
    # key, as `resident session start` tells its own: sandboxed, they cannot read api.json.
    host_context(runtime).executions.callback = lambda session: _callback(discovery, session)
    tasks: list[asyncio.Task[None]] = []

    def started() -> None:
        tasks.append(asyncio.get_running_loop().create_task(hub.run()))
        publish()
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
    return server
