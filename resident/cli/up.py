"""`resident up` and `resident down`: the home's runtime as a long-lived process behind the loopback API."""

from __future__ import annotations

import click
import msgspec

from resident.api.discovery import Discovery, parse_listen
from resident.api.wire import READ_TIMEOUT
from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, stdout
from resident.store.home import HomeLock, ensure_home, resolve_home

__all__ = ["COMMANDS"]


def _announce(discovery: Discovery) -> None:
    # One line, flushed: a host that spawned `up` reads it to learn the address and the token.
    click.echo(msgspec.json.encode(discovery).decode("utf-8"))


@click.command()
@click.option(
    "--listen",
    type=UTF8,
    default="127.0.0.1:0",
    show_default=True,
    metavar="HOST:PORT|unix:PATH",
    help="A loopback address (127.0.0.1, [::1], localhost; port 0 picks a free one) or a unix socket.",
)
@click.option("--detach", is_flag=True, help="Run in the background; return once it answers.")
@click.option(
    "--read-timeout", type=click.FloatRange(min=0.1, max=3600), default=READ_TIMEOUT, show_default=True,
    help="Seconds a client has to send a whole request.",
)
@json_option
@pass_state
def up(state: CliState, listen: str, detach: bool, read_timeout: float, as_json: bool) -> None:  # noqa: ARG001 - click passes every option; this one is read by the group's callback
    """Run the home's runtime as one process, serving the authenticated API on loopback.

    Once it answers it writes api.json in the home (private: address, pid, token, API version)
    and prints the same facts as one JSON line. Python hosts connect with
    `Runtime.connect(home)`; others send `Authorization: Bearer TOKEN` (the API is described at
    /openapi.json). SIGTERM or Ctrl-C stops it gracefully: requests in flight finish, the actors
    stop, api.json is removed. `resident down` does that from another shell. Only loopback
    addresses are accepted. With --detach it runs on in the background (its log is up.log in
    the home) and this command returns once it answers.
    """
    target = parse_listen(listen)
    if detach:
        from resident.api.process import start_detached  # noqa: PLC0415 - only the detaching parent needs it

        home = ensure_home(resolve_home(state.home))
        # A moment's claim says now if another process has the home, and leaves the lock file that
        # marks the folder as a home before the log goes in beside it.
        with HomeLock(home):
            pass
        _announce(start_detached(home, listen, read_timeout=read_timeout))
        return
    # The server stack is imported only by the process that serves.
    from resident.api.server import serve  # noqa: PLC0415 - loaded only when this runs

    serve(state.home, target, _announce, read_timeout=read_timeout)


@click.command()
@click.option(
    "--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True, help="Seconds to wait for it to stop."
)
@json_option
@pass_state
def down(state: CliState, timeout: float, as_json: bool) -> None:
    """Stop the runtime `resident up` runs for the home, and wait until its process has ended.

    The process named in api.json is signalled only if the kernel says it holds the home's lock and
    it runs the resident command; a discovery file left by a killed process is removed and reported
    (exit 1, RuntimeNotUp). A process that let the home go but does not end is reported
    (ShutdownTimeout), never as stopped.
    """
    from resident.api.process import stop  # noqa: PLC0415 - loaded only when this runs

    home = resolve_home(state.home)
    stopped = stop(home, timeout)
    if as_json:
        emit_json({"stopped": True, "pid": stopped.pid, "address": stopped.address, "home": str(home)})
    else:
        stdout.print(f"stopped the runtime of {home} (pid {stopped.pid}, {stopped.address})")


COMMANDS = (up, down)
