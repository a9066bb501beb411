"""`resident init | status | backup | restore`: the home itself."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from resident.api.discovery import running
from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import require_closed, runtime_for
from resident.errors import InvalidInput
from resident.messages.home_calls import BackupRequest, HomeStatus, StatusQuery
from resident.operations import home as home_ops
from resident.realm.tokens import HOME_TOKEN_FILE, read_token_file
from resident.realm.urls import REALM_CA_FILE, realm_base_url
from resident.store.home import CONFIG_FILE, HomeLock, ensure_home, resolve_home, write_private_file

__all__ = ["COMMANDS"]


def _replace_config(path: Path, content: bytes | None) -> None:
    """Write (or, with None, remove) `resident.toml` atomically and privately."""
    if content is None:
        path.unlink(missing_ok=True)
        return
    write_private_file(path, content)


@click.command()
@click.option(
    "--realm",
    "realm_url",
    type=UTF8,
    metavar="URL",
    help="Realm server to replicate to, e.g. http://127.0.0.1:8765 (see `resident realm serve`).",
)
@click.option(
    "--realm-token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A file holding the home's Realm token (`resident realm enroll`); copied into the home, 0600.",
)
@click.option(
    "--realm-ca",
    type=click.Path(dir_okay=False, path_type=Path),
    help="PEM bundle of the only CAs trusted for Realm's certificate; copied into the home as [realm] ca_file.",
)
@click.option(
    "--force", is_flag=True, help="Rewrite resident.toml with the default team (and --realm) even if it exists."
)
@json_option
@pass_state
def init(
    state: CliState, realm_url: str | None, realm_token_file: Path | None, realm_ca: Path | None, force: bool,
    as_json: bool,
) -> None:
    """Create the home and its resident.toml, or set its Realm URL.

    The home is created private (0700) with the default team of five and memory off (turn it on
    with `resident memory enable`). On an existing home, resident.toml is left as it is unless
    --realm (which changes only the [realm] url) or --force (which starts over from the defaults)
    is given. If the home cannot be opened (in use, another schema), resident.toml is not changed:
    the home is claimed before anything is written. --realm-token-file copies the token Realm
    issued to this home into it ($RESIDENT_REALM_TOKEN overrides it). --realm-ca pins Realm's CA: the
    bundle is copied into the home and named by [realm] ca_file ($RESIDENT_REALM_CA overrides it).
    While `resident up` runs for the home, only a plain `init` of a home that has its resident.toml
    (which changes nothing) runs; the others say `resident down`.
    """
    token = None if realm_token_file is None else read_token_file(realm_token_file)
    ca_pem = None if realm_ca is None else _read_ca(realm_ca)
    url = None
    if realm_url is not None:
        try:
            url = realm_base_url(realm_url)
        except InvalidInput as error:
            raise InvalidInput(f"--realm: {error}") from None
    home = resolve_home(state.home)
    unchanged = token is None and url is None and ca_pem is None and not force
    if unchanged and (home / CONFIG_FILE).exists() and running(home) is not None:
        _kept_while_up(state, as_json)
        return
    _init_here(require_closed(home), url, token, force=force, as_json=as_json, ca_pem=ca_pem)


def _read_ca(path: Path) -> bytes:
    """The PEM bytes of `path`, refused in one line unless they load as CA certificates."""
    from resident.realm.client import pinned_context  # noqa: PLC0415 - loads httpx, only when pinning

    try:
        pinned_context(str(path))
        return path.read_bytes()
    except InvalidInput as error:
        raise InvalidInput(f"--realm-ca: {error}") from None


def _kept_while_up(state: CliState, as_json: bool) -> None:
    """What a plain `init` says of a home whose runtime is up: it is there, and nothing changes."""
    with runtime_for(state) as runtime:
        status: HomeStatus = runtime.run(home_ops.STATUS, StatusQuery())
    _said_init(Path(status.home), status.realm, created=False, changed=False, as_json=as_json)


def _init_here(
    home: Path, url: str | None, token: str | None, *, force: bool, as_json: bool, ca_pem: bytes | None = None
) -> None:
    """Create or update the home's configuration, holding its lock, and open it once to check it."""
    from resident.config import default_config, load_config, render_config  # noqa: PLC0415 - loaded only when this runs
    from resident.runtime import Runtime  # noqa: PLC0415 - loaded only when this runs

    home = ensure_home(home)
    path = home / CONFIG_FILE
    # The claim comes first: a home another process has open is refused before anything is written.
    with HomeLock(home) as lock:
        previous = path.read_bytes() if path.exists() else None
        config = default_config(path) if previous is None or force else load_config(path)
        if url is not None:
            config = config.with_realm(url)
        if ca_pem is not None:
            config = replace(config, realm_ca_file=REALM_CA_FILE)
        content = render_config(config).encode("utf-8")
        asked = force or url is not None or ca_pem is not None
        changed = previous is None or (asked and content != previous)
        if changed:
            _replace_config(path, content)
        if ca_pem is not None:
            # Before the runtime opens: the configuration now names it, and opening checks it is there.
            write_private_file(home / REALM_CA_FILE, ca_pem)
        try:
            with Runtime.open(home, lock=lock):
                pass  # opening checks the schema, and stamps a new store with its version
        except BaseException:
            if changed:
                _replace_config(path, previous)
            raise
        if token is not None:
            write_private_file(home / HOME_TOKEN_FILE, f"{token}\n".encode("ascii"))
    _said_init(home, config.realm_url, created=previous is None, changed=changed, as_json=as_json)


def _said_init(home: Path, realm: str | None, *, created: bool, changed: bool, as_json: bool) -> None:
    """What `init` did to the home's resident.toml, and the Realm it names."""
    path = home / CONFIG_FILE
    if as_json:
        emit_json({"home": str(home), "config": str(path), "realm": realm, "created": created, "changed": changed})
        return
    stdout.print(f"{'created' if created else 'updated' if changed else 'kept'} {path}")
    stdout.print(f"realm: {realm or 'none (records stay pending until you set one with --realm)'}")


@click.command()
@json_option
@pass_state
def status(state: CliState, as_json: bool) -> None:
    """The home, its members, memory and every supervised actor.

    For each actor: its state, restarts in the intensity window and in total, messages buffered
    while it restarts, and dead letters. With --json: an object with home, members, realm, memory
    and supervisor.
    """
    with runtime_for(state, create=False) as runtime:
        status: HomeStatus = runtime.run(home_ops.STATUS, StatusQuery())
    memory, stats = status.memory, status.supervisor
    if as_json:
        emit_json(
            {
                "home": status.home,
                "schema_version": status.schema_version,
                "members": status.members,
                "realm": status.realm,
                "memory": memory,
                "supervisor": stats,
            }
        )
        return
    stdout.print(f"home     {status.home} (schema {status.schema_version})")
    stdout.print(f"members  {', '.join(status.members)} (coordinator {status.coordinator})")
    if memory.enabled:
        stdout.print(
            f"memory   on — {memory.provider}, embedder {memory.embedder}, {memory.records} records, "
            f"substrate {memory.substrate}"
        )
    else:
        stdout.print("memory   off — turn it on with `resident memory enable`")
    stdout.print(f"realm    {status.realm or 'none'}")
    print_table(
        ("actor", "state", "restarts", "in window", "buffered", "dead letters"),
        (
            (child.name, child.state, str(child.total_restarts), str(child.restarts_in_window),
             str(child.buffered), str(child.dead_letters))
            for child in stats.children
        ),
        ids=("actor", "state"),
        title="actors",
    )
    for child in stats.children:
        if child.condition:
            stdout.print(f"{child.name}: {child.condition}")


@click.command()
@click.argument("dest", type=click.Path(path_type=Path))
@json_option
@pass_state
def backup(state: CliState, dest: Path, as_json: bool) -> None:
    """Copy the home to DEST, verifiably.

    DEST must not exist or be an empty directory. It receives a consistent, compacted copy of the
    store, the home's resident.toml, and a manifest with the schema version and the SHA-256 of
    every file. The runtime may be up (`resident up`) and busy meanwhile: the copy is one consistent
    snapshot. Bring it back with `resident restore DEST`.
    """
    with runtime_for(state, create=False) as runtime:
        # The runtime writes the copy, perhaps in another process: it gets the path whole.
        manifest = runtime.run(home_ops.BACKUP, BackupRequest(dest.absolute()))
    if as_json:
        emit_json({"backup": str(dest), "manifest": manifest})
    else:
        stdout.print(f"backup written to {dest} (schema {manifest.schema_version}, {len(manifest.files)} files)")


@click.command()
@click.argument("src", type=click.Path(path_type=Path))
@json_option
@pass_state
def restore(state: CliState, src: Path, as_json: bool) -> None:
    """Replace the home's store with the backup at SRC.

    The manifest, every file's size and checksum and the schema version are verified before the
    home is touched; a damaged backup is refused and the home is left as it was. The switch to
    the restored store is atomic. The home must not be open elsewhere.
    """
    from resident.runtime import Runtime  # noqa: PLC0415 - loaded only when this runs

    manifest = Runtime.restore(src, require_closed(state.home))
    if as_json:
        emit_json({"restored": str(src), "manifest": manifest})
    else:
        stdout.print(f"restored {src} into {resolve_home(state.home)}")


COMMANDS = (init, status, backup, restore)
