"""`resident realm serve | invalidate`: the governance side, run on this machine."""

from __future__ import annotations

from pathlib import Path

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, stdout
from resident.config import load_config
from resident.errors import InvalidInput
from resident.loopback import is_loopback_host
from resident.store.home import CONFIG_FILE, resolve_home

__all__ = ["COMMANDS"]


@click.group(short_help="Run the Realm server, or invalidate a record in it.")
def realm() -> None:
    """Run the Realm governance server, or act as its governance side.

    A home replicates to the Realm named by `[realm] url` in its resident.toml (set it with
    `resident init --realm URL`).
    """


@realm.command()
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    help="Realm's own LMDB directory (default: <home>/realm).",
)
@click.option(
    "--host", type=UTF8, default="127.0.0.1", show_default=True, help="Address to listen on (loopback only)."
)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0 picks a free port.")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (Realm has no authentication).")
@click.option(
    "--ready-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write {host, port, pid} here as JSON once listening.",
)
@pass_state
def serve(
    state: CliState, data: Path | None, host: str, port: int, allow_remote: bool, ready_file: Path | None
) -> None:
    """Serve Realm over HTTP until interrupted.

    Realm's state (accepted records, invalidations) is durable in --data and survives restarts.
    Ctrl-C or SIGTERM stops it cleanly. Point a home at it with `resident init --realm URL`.
    """
    # starlette and uvicorn are imported only by the command that serves.
    from resident.realm.server import serve as serve_realm  # noqa: PLC0415

    directory = data if data is not None else resolve_home(state.home) / "realm"
    if allow_remote or is_loopback_host(host):
        # A refused --host is one error line from serve(), with no announcement before it.
        where = f"http://{host}:{port}" if port else f"{host}, on a free port (see --ready-file)"
        stdout.print(f"Realm serving {directory} on {where} (Ctrl-C to stop)")
    serve_realm(directory, host=host, port=port, allow_remote=allow_remote, ready_file=ready_file)


@realm.command()
@click.argument("record_id", metavar="ID", type=UTF8)
@click.option(
    "--reason", type=UTF8, required=True, help="Why the record is invalidated (shown with the withheld record)."
)
@click.option(
    "--realm", "realm_url", type=UTF8, metavar="URL", help="Realm to act on (default: [realm] url of resident.toml)."
)
@json_option
@pass_state
def invalidate(state: CliState, record_id: str, reason: str, realm_url: str | None, as_json: bool) -> None:
    """Invalidate record ID, which Realm accepted before.

    Every runtime withholds it (`invalidated`) once it polls Realm's invalidation feed, at the
    latest on its next `resident replication sync`.
    """
    from resident.realm.client import RealmClient  # noqa: PLC0415

    url = realm_url or load_config(resolve_home(state.home) / CONFIG_FILE).realm_url
    if url is None:
        raise InvalidInput("no Realm URL: pass --realm URL or set it with `resident init --realm URL`")
    with RealmClient(url) as client:
        item = client.invalidate(record_id, reason)
    if as_json:
        emit_json(item)
    else:
        stdout.print(f"invalidated {item.id} (feed position {item.seq}): {item.reason}")


COMMANDS = (realm,)
