"""`resident realm serve | enroll | invalidate | records`: the governance side, run on this machine."""

from __future__ import annotations

from pathlib import Path

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, stdout
from resident.errors import InvalidInput
from resident.realm.tokens import ADMIN_TOKEN_FILE, read_token_file
from resident.store.home import CONFIG_FILE, resolve_home

__all__ = ["COMMANDS"]

_DATA_HELP = "Realm's own LMDB directory (default: <home>/realm)."


@click.group()
def realm() -> None:
    """Run the Realm governance server, enroll homes with it, or act as its governance side.

    A home replicates to the Realm named by `[realm] url` in its resident.toml, with the token
    Realm issued to it: `resident realm enroll NAME` prints one, `resident init --realm URL
    --realm-token-file FILE` gives it to the home.
    """


def _data_dir(state: CliState, data: Path | None) -> Path:
    return data if data is not None else resolve_home(state.home) / "realm"


@realm.command()
@click.option("--data", type=click.Path(file_okay=False, path_type=Path), help=_DATA_HELP)
@click.option(
    "--host", type=UTF8, default="127.0.0.1", show_default=True, help="Address to listen on (loopback only)."
)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0 picks a free port.")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (needs --tls-cert and --tls-key).")
@click.option("--tls-cert", type=click.Path(dir_okay=False, path_type=Path), help="PEM certificate: serve https.")
@click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path), help="PEM private key of --tls-cert.")
@click.option(
    "--read-timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
    help="Seconds a client has to send a whole request.",
)
@click.option(
    "--ready-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write {host, port, pid, url} here as JSON once listening.",
)
@pass_state
def serve(
    state: CliState,
    data: Path | None,
    host: str,
    port: int,
    allow_remote: bool,
    tls_cert: Path | None,
    tls_key: Path | None,
    read_timeout: float,
    ready_file: Path | None,
) -> None:
    """Serve Realm over HTTP until interrupted.

    Realm's state (accepted records, invalidations, enrolled homes) is durable in --data and
    survives restarts. The first start writes the admin token to --data/admin.token. Every route
    but health needs a token: enroll homes with `resident realm enroll`. Ctrl-C or SIGTERM stops it
    cleanly; a second `realm serve` on the same --data is refused.
    """
    # starlette and uvicorn are imported only by the command that serves.
    from resident.realm.server import serve as serve_realm  # noqa: PLC0415 - loaded only when this runs

    directory = _data_dir(state, data)
    if (tls_cert is None) != (tls_key is None):
        raise InvalidInput("TLS needs both --tls-cert and --tls-key")
    tls = (tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None

    def announce(url: str) -> None:
        # Said only once the socket is bound and serving, with the port it really got.
        stdout.print(f"Realm serving {directory} on {url} (Ctrl-C to stop)")
        stdout.print(f"admin token: {directory / ADMIN_TOKEN_FILE}")

    serve_realm(
        directory, host=host, port=port, allow_remote=allow_remote, ready_file=ready_file, tls=tls,
        read_timeout=read_timeout, on_started=announce,
    )


@realm.command()
@click.argument("name", type=UTF8)
@click.option("--data", type=click.Path(file_okay=False, path_type=Path), help=_DATA_HELP)
@click.option(
    "--rotate", is_flag=True, help="Issue a new token for a home enrolled before (its old one stops working).",
)
@json_option
@pass_state
def enroll(state: CliState, name: str, data: Path | None, rotate: bool, as_json: bool) -> None:
    """Issue the Realm token of home NAME, printed once.

    Realm keeps only its hash. Save it to a file readable by you alone and give it to the home
    with `resident init --realm URL --realm-token-file FILE` (or $RESIDENT_REALM_TOKEN). Works
    while Realm serves.
    """
    from resident.realm.state import RealmState  # noqa: PLC0415 - loaded only when this runs

    with RealmState.open(_data_dir(state, data)) as realm_state:
        token = realm_state.enroll(name, rotate=rotate)
    if as_json:
        emit_json({"home": name, "token": token})
    else:
        click.echo(token)


def _admin_client(state: CliState, realm_url: str | None, token_file: Path | None) -> tuple[str, str]:
    """The Realm URL and admin token a governance command uses."""
    from resident.config import load_config  # noqa: PLC0415 - loaded only when this runs

    url = realm_url or load_config(resolve_home(state.home) / CONFIG_FILE).realm_url
    if url is None:
        raise InvalidInput("no Realm URL: pass --realm URL or set it with `resident init --realm URL`")
    if token_file is None:
        raise InvalidInput(f"governance needs Realm's admin token: pass --token-file DATA/{ADMIN_TOKEN_FILE}")
    return url, read_token_file(token_file)


_REALM_OPTION = click.option(
    "--realm", "realm_url", type=UTF8, metavar="URL", help="Realm to act on (default: [realm] url of resident.toml)."
)
_TOKEN_OPTION = click.option(
    "--token-file", type=click.Path(dir_okay=False, path_type=Path),
    help=f"File holding Realm's admin token ({ADMIN_TOKEN_FILE} in its data directory).",
)


@realm.command()
@click.argument("record_id", metavar="ID", type=UTF8)
@click.option(
    "--reason", type=UTF8, required=True, help="Why the record is invalidated (shown with the withheld record)."
)
@_REALM_OPTION
@_TOKEN_OPTION
@json_option
@pass_state
def invalidate(
    state: CliState, record_id: str, reason: str, realm_url: str | None, token_file: Path | None, as_json: bool
) -> None:
    """Invalidate record ID, which Realm accepted before (needs the admin token).

    Every runtime withholds it (`invalidated`) once it polls Realm's invalidation feed, at the
    latest on its next `resident replication sync`.
    """
    from resident.realm.client import RealmClient  # noqa: PLC0415 - loaded only when this runs

    url, token = _admin_client(state, realm_url, token_file)
    with RealmClient(url, token=token) as client:
        item = client.invalidate(record_id, reason)
    if as_json:
        emit_json(item)
    else:
        stdout.print(f"invalidated {item.id} (feed position {item.seq}): {item.reason}")


@realm.command()
@click.option("--after", type=UTF8, default="", help="List records with ids after this one.")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True, help="At most this many.")
@_REALM_OPTION
@_TOKEN_OPTION
@json_option
@pass_state
def records(
    state: CliState, after: str, limit: int, realm_url: str | None, token_file: Path | None, as_json: bool
) -> None:
    """List the records Realm accepted, by id, with the home that owns each (needs the admin token)."""
    from resident.realm.client import RealmClient  # noqa: PLC0415 - loaded only when this runs

    url, token = _admin_client(state, realm_url, token_file)
    with RealmClient(url, token=token) as client:
        page = client.records(after, limit)
    if as_json:
        emit_json(page)
        return
    for item in page.items:
        stdout.print(f"{item.id}  {item.home}  {'invalidated' if item.invalidated else 'accepted'}")
    if page.next is not None:
        stdout.print(f"more: --after {page.next}")


COMMANDS = (realm,)
