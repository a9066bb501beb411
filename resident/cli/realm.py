"""`resident realm serve | enroll | migrate | copy | invalidate | records`: Realm and its governance side."""

from __future__ import annotations

from pathlib import Path

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, stdout
from resident.errors import InvalidInput
from resident.realm.tokens import ADMIN_TOKEN_FILE, read_token_file
from resident.store.home import CONFIG_FILE, resolve_home

__all__ = ["COMMANDS"]

_DATA_HELP = "Realm's own LMDB directory (default: <home>/realm)."
_DATABASE_HELP = "postgresql:// URL of Realm's database, instead of --data (see `resident realm migrate`)."


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
@click.option("--database", type=UTF8, metavar="URL", help=_DATABASE_HELP)
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
    database: str | None,
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

    With --database, Realm's state is in PostgreSQL instead, and any number of `realm serve` may share
    it (on this machine or others): migrate it first with `resident realm migrate --database URL`.
    """
    # starlette and uvicorn are imported only by the command that serves.
    from resident.realm.server import serve as serve_realm  # noqa: PLC0415 - loaded only when this runs

    if data is not None and database is not None:
        raise InvalidInput("pass --data (an LMDB Realm) or --database (a PostgreSQL Realm), not both")
    directory = None if database is not None else _data_dir(state, data)
    if (tls_cert is None) != (tls_key is None):
        raise InvalidInput("TLS needs both --tls-cert and --tls-key")
    tls = (tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None

    def announce(url: str) -> None:
        # Said only once the socket is bound and serving, with the port it really got.
        if directory is None:
            stdout.print(f"Realm serving its PostgreSQL database on {url} (Ctrl-C to stop)")
            return
        stdout.print(f"Realm serving {directory} on {url} (Ctrl-C to stop)")
        stdout.print(f"admin token: {directory / ADMIN_TOKEN_FILE}")

    serve_realm(
        directory, database=database, host=host, port=port, allow_remote=allow_remote, ready_file=ready_file, tls=tls,
        read_timeout=read_timeout, on_started=announce,
    )


@realm.command()
@click.argument("name", type=UTF8)
@click.option("--data", type=click.Path(file_okay=False, path_type=Path), help=_DATA_HELP)
@click.option("--database", type=UTF8, metavar="URL", help=_DATABASE_HELP)
@click.option(
    "--rotate", is_flag=True, help="Issue a new token for a home enrolled before (its old one stops working).",
)
@json_option
@pass_state
def enroll(state: CliState, name: str, data: Path | None, database: str | None, rotate: bool, as_json: bool) -> None:
    """Issue the Realm token of home NAME, printed once.

    Realm keeps only its hash. Save it to a file readable by you alone and give it to the home
    with `resident init --realm URL --realm-token-file FILE` (or $RESIDENT_REALM_TOKEN). Works
    while Realm serves.
    """
    from resident.realm.state import RealmState  # noqa: PLC0415 - loaded only when this runs

    if data is not None and database is not None:
        raise InvalidInput("pass --data (an LMDB Realm) or --database (a PostgreSQL Realm), not both")
    opened = RealmState.open(_data_dir(state, data)) if database is None else RealmState.connect(database)
    with opened as realm_state:
        token = realm_state.enroll(name, rotate=rotate)
    if as_json:
        emit_json({"home": name, "token": token})
    else:
        click.echo(token)


@realm.command()
@click.option("--database", type=UTF8, metavar="URL", required=True, help="postgresql:// URL of Realm's database.")
@click.option(
    "--token-dir", type=click.Path(file_okay=False, path_type=Path),
    help=f"Where the admin token is kept ({ADMIN_TOKEN_FILE}; default: <home>/realm).",
)
@json_option
@pass_state
def migrate(state: CliState, database: str, token_dir: Path | None, as_json: bool) -> None:
    """Bring the PostgreSQL database at URL to this Realm's schema (versioned steps, each applied once).

    The first migration also issues Realm's admin token: written to --token-dir/admin.token (0600) and
    kept in the database as its digest, which every `realm serve --database URL` checks governance against.
    """
    from resident.realm.pg_setup import migrate_database  # noqa: PLC0415 - psycopg only for this command

    done = migrate_database(database, _data_dir(state, token_dir))
    if as_json:
        emit_json({
            "database": done.where, "before": done.before, "after": done.after,
            "admin_token_file": str(done.admin_token_file), "token_matches": done.token_matches,
        })
        return
    said = "already at" if done.before == done.after else f"migrated from schema {done.before} to"
    stdout.print(f"{done.where}: {said} schema {done.after}")
    if done.token_matches:
        stdout.print(f"admin token: {done.admin_token_file}")
    else:
        stdout.print(f"the database keeps another admin token than {done.admin_token_file}; use that one")


@realm.command(name="copy")
@click.option(
    "--from", "source", type=click.Path(file_okay=False, path_type=Path), required=True,
    help="The LMDB Realm's data directory (stop its `realm serve` first).",
)
@click.option("--to", "target", type=UTF8, metavar="URL", required=True, help="An empty, migrated PostgreSQL Realm.")
@json_option
def copy_command(source: Path, target: str, as_json: bool) -> None:
    """Copy an LMDB Realm into PostgreSQL, verifiably: all or nothing, each table's rows and digest compared."""
    from resident.realm.copy import copy_realm  # noqa: PLC0415 - psycopg only for this command

    report = copy_realm(source, target)
    if as_json:
        emit_json([
            {"table": t.table, "rows": t.target_rows, "digest": t.target_digest, "matches": t.matches} for t in report
        ])
        return
    for item in report:
        stdout.print(
            f"{item.table:<14} {item.source_rows:>8} rows  sha256 {item.source_digest[:16]}  "
            f"→ {item.target_rows:>8} rows  sha256 {item.target_digest[:16]}  {'same' if item.matches else 'DIFFERENT'}"
        )
    stdout.print("copied; every table's rows and digest match")


def _admin_client(
    state: CliState, realm_url: str | None, token_file: Path | None, realm_ca: Path | None
) -> tuple[str, str, str | None]:
    """The Realm URL, admin token and pinned CA bundle (None: the system's) a governance command uses.

    The URL and the pin default to the home's, so a Realm the home reaches under a private CA is reached
    the same way here; `--realm-ca` names another bundle.
    """
    from resident.config import load_config  # noqa: PLC0415 - loaded only when this runs
    from resident.runtime.replication import home_realm_ca  # noqa: PLC0415 - loaded only when this runs

    home = resolve_home(state.home)
    config = load_config(home / CONFIG_FILE)
    url = realm_url or config.realm_url
    if url is None:
        raise InvalidInput("no Realm URL: pass --realm URL or set it with `resident init --realm URL`")
    if token_file is None:
        raise InvalidInput(f"governance needs Realm's admin token: pass --token-file DATA/{ADMIN_TOKEN_FILE}")
    ca_file = home_realm_ca(home, config.realm_ca_file, str(realm_ca.resolve()) if realm_ca else None)
    return url, read_token_file(token_file), ca_file


_REALM_OPTION = click.option(
    "--realm", "realm_url", type=UTF8, metavar="URL", help="Realm to act on (default: [realm] url of resident.toml)."
)
_TOKEN_OPTION = click.option(
    "--token-file", type=click.Path(dir_okay=False, path_type=Path),
    help=f"File holding Realm's admin token ({ADMIN_TOKEN_FILE} in its data directory).",
)
_CA_OPTION = click.option(
    "--realm-ca", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
    help="The only CA bundle to trust for Realm's certificate (default: the home's [realm] ca_file, if any).",
)


@realm.command()
@click.argument("record_id", metavar="ID", type=UTF8)
@click.option(
    "--reason", type=UTF8, required=True, help="Why the record is invalidated (shown with the withheld record)."
)
@_REALM_OPTION
@_TOKEN_OPTION
@_CA_OPTION
@json_option
@pass_state
def invalidate(
    state: CliState,
    record_id: str,
    reason: str,
    realm_url: str | None,
    token_file: Path | None,
    realm_ca: Path | None,
    as_json: bool,
) -> None:
    """Invalidate record ID, which Realm accepted before (needs the admin token).

    Every runtime withholds it (`invalidated`) once it polls Realm's invalidation feed, at the
    latest on its next `resident replication sync`.
    """
    from resident.realm.client import RealmClient  # noqa: PLC0415 - loaded only when this runs

    url, token, ca_file = _admin_client(state, realm_url, token_file, realm_ca)
    with RealmClient(url, token=token, ca_file=ca_file) as client:
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
@_CA_OPTION
@json_option
@pass_state
def records(
    state: CliState,
    after: str,
    limit: int,
    realm_url: str | None,
    token_file: Path | None,
    realm_ca: Path | None,
    as_json: bool,
) -> None:
    """List the records Realm accepted, by id, with the home that owns each (needs the admin token)."""
    from resident.realm.client import RealmClient  # noqa: PLC0415 - loaded only when this runs

    url, token, ca_file = _admin_client(state, realm_url, token_file, realm_ca)
    with RealmClient(url, token=token, ca_file=ca_file) as client:
        page = client.records(after, limit)
    if as_json:
        emit_json(page)
        return
    for item in page.items:
        stdout.print(f"{item.id}  {item.home}  {'invalidated' if item.invalidated else 'accepted'}")
    if page.next is not None:
        stdout.print(f"more: --after {page.next}")


COMMANDS = (realm,)
