"""What a session sets up in its harness's own home so the runtime's address and grant reach the harness's tools.

Codex runs its shell tools with its own environment policy, which drops variables whose names look like
secrets (`*TOKEN*`, `*KEY*`, `*SECRET*`): `$RESIDENT_GRANT_TOKEN` never reaches them. So every session also
gets its token in a private file in the harness's own folder (bound into the sandbox), named by
`$RESIDENT_GRANT_FILE`, a name no such filter drops; the `resident` command reads it when the variable itself
is absent. The token file goes when the session ends.

For Codex the session also adds to the member's Codex home's `config.toml` the runtime's MCP server and a
shell environment policy that inherits the session's environment. Codex starts an MCP server with a bare
environment plus the variables its entry names, so the entry forwards (`env_vars`) the session's callback
variables from Codex's own environment: the grant file, the home, the API's address and proof key, the
session. Nothing in the entry is particular to one session, so two sessions of one member share it.

The Codex home is the member's, and may hold the user's own config.toml: every change is made under a lock
on the member's harness folder, by whole-file replacement. What the file was before the first of the
sessions sharing it is kept beside it (`codex-config.kept.json`: its bytes, and the two values the sessions
set). The last session to end takes out what the sessions added: if the file is otherwise as it was, its
original bytes come back exactly (or it goes, if there was none); if the user or Codex changed something
else meanwhile, only the two values are put back and the change stays. A session whose manifest is gone
(ended, or never saved) no longer holds the file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import tomli_w

from resident.coordination.callback_env import API_ADDRESS_ENV, PROOF_KEY_ENV, SESSION_ENV
from resident.coordination.tokens import GRANT_FILE_ENV
from resident.errors import ProjectionRefused
from resident.files import read_private_file, write_private_file
from resident.runtime.sessions.tree import MANIFEST_FILE, Manifest, is_session_id
from resident.sessions.projection import MCP_SERVER
from resident.store.home import HOME_ENV

__all__ = ["CODEX_CONFIG", "SHARED", "codex_mcp_entry", "configure_codex", "restore_harness_home", "write_grant_file"]

CODEX_CONFIG = "config.toml"
# `Manifest.codex_config` of a session that holds the member's Codex config (see the module docstring).
SHARED = "shared"
# Older sessions kept the whole file in their own folder ("kept") or noted there was none ("absent").
_KEPT_CONFIG = "codex-config.original"
_KEPT_STATE = "codex-config.kept.json"
_LOCK = "codex-config.lock"
_MAX_CONFIG = 4 << 20
# What the runtime's MCP server needs from the session, forwarded by name from Codex's own environment.
FORWARDED = (GRANT_FILE_ENV, HOME_ENV, API_ADDRESS_ENV, PROOF_KEY_ENV, SESSION_ENV)
_POLICY = "shell_environment_policy"


class _Kept(msgspec.Struct):
    """The config before the first session that shares it, and the sessions that hold it now."""

    original: bytes | None
    server: dict[str, Any] | None
    inherit: str | None
    sessions: list[str] = msgspec.field(default_factory=list)


def write_grant_file(folder: Path, session: str, token: str) -> Path:
    """The session's grant token in a private file of `folder` (its harness's own, visible in the sandbox)."""
    path = folder / f".resident-grant-{session}"
    write_private_file(path, token.encode("ascii"))
    return path


def codex_mcp_entry(resident: tuple[str, ...]) -> dict[str, Any]:
    """The runtime's MCP server as a Codex `mcp_servers` entry: this `resident`, the session's variables forwarded."""
    program, *arguments = resident
    return {"command": program, "args": [*arguments, "mcp", "serve"], "env_vars": list(FORWARDED)}


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The member's harness folder's lock on its Codex config, held by one session's change at a time."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read(config: Path) -> tuple[bytes | None, dict[str, Any]]:
    try:
        original: bytes | None = read_private_file(config, _MAX_CONFIG)
    except FileNotFoundError:
        return None, {}
    try:
        return original, tomllib.loads(original.decode("utf-8")) if original else {}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ProjectionRefused(
            f"{config} does not read as TOML ({error}); fix or remove it, then start again"
        ) from None


def _load_kept(path: Path, sessions_root: Path) -> _Kept | None:
    """The kept state, without the sessions whose manifest is gone; None when there is none (or none holds it)."""
    try:
        kept = msgspec.json.decode(read_private_file(path, 2 * _MAX_CONFIG), type=_Kept)
    except (FileNotFoundError, msgspec.DecodeError):
        return None
    kept.sessions = [s for s in kept.sessions if is_session_id(s) and (sessions_root / s / MANIFEST_FILE).is_file()]
    return kept


def configure_codex(codex_home: Path, session: str, sessions_root: Path, resident: tuple[str, ...]) -> None:
    """Add the runtime's MCP server and an inheriting shell environment policy to the Codex home's config.toml,
    held by `session` until it ends (the caller has written `SHARED` into its manifest first)."""
    config = codex_home / CODEX_CONFIG
    state = codex_home.parent / _KEPT_STATE
    with _locked(codex_home.parent):
        before, data = _read(config)
        kept = _load_kept(state, sessions_root)
        # A kept state no live session holds (one crashed and lost its manifest) still has the true original.
        if kept is None:
            policy = data.get(_POLICY)
            kept = _Kept(
                original=before, server=(data.get("mcp_servers") or {}).get(MCP_SERVER),
                inherit=policy.get("inherit") if isinstance(policy, dict) else None,
            )
        if session not in kept.sessions:
            kept.sessions.append(session)
        write_private_file(state, msgspec.json.encode(kept))
        servers = data.setdefault("mcp_servers", {})
        if not isinstance(servers, dict):
            raise ProjectionRefused(f"{config}: `mcp_servers` is not a table; fix it, then start again")
        servers[MCP_SERVER] = codex_mcp_entry(resident)
        # The shell tools see the session's environment (the grant file's name among it): Codex's default is that.
        policy = data.setdefault(_POLICY, {})
        if not isinstance(policy, dict):
            raise ProjectionRefused(f"{config}: `{_POLICY}` is not a table; fix it, then start again")
        policy.setdefault("inherit", "all")
        codex_home.mkdir(parents=True, exist_ok=True)
        write_private_file(config, tomli_w.dumps(data).encode("utf-8"))


def _without_ours(data: dict[str, Any], kept: _Kept) -> dict[str, Any]:
    """`data` with the two values the sessions set put back as they were before the first."""
    servers = data.get("mcp_servers")
    if isinstance(servers, dict):
        servers.pop(MCP_SERVER, None)
        if kept.server is not None:
            servers[MCP_SERVER] = kept.server
        if not servers:
            del data["mcp_servers"]
    policy = data.get(_POLICY)
    if isinstance(policy, dict):
        policy.pop("inherit", None)
        if kept.inherit is not None:
            policy["inherit"] = kept.inherit
        if not policy:
            del data[_POLICY]
    return data


def _release_codex(codex_home: Path, session: str, sessions_root: Path) -> None:
    config = codex_home / CODEX_CONFIG
    state = codex_home.parent / _KEPT_STATE
    with _locked(codex_home.parent):
        kept = _load_kept(state, sessions_root)
        if kept is None:
            return
        others = [s for s in kept.sessions if s != session]
        if others:
            kept.sessions = others
            write_private_file(state, msgspec.json.encode(kept))
            return
        _before, data = _read(config)
        restored = _without_ours(data, kept)
        original = tomllib.loads(kept.original.decode("utf-8")) if kept.original else {}
        if restored == original:
            if kept.original is None:
                config.unlink(missing_ok=True)
            else:
                write_private_file(config, kept.original)
        else:
            write_private_file(config, tomli_w.dumps(restored).encode("utf-8"))
        state.unlink(missing_ok=True)


def restore_harness_home(manifest: Manifest, session_folder: Path) -> list[str]:
    """Remove the session's token file and take its hold off the Codex config; notes on what could not be."""
    notes: list[str] = []
    if manifest.grant_file:
        with contextlib.suppress(FileNotFoundError):
            Path(manifest.grant_file).unlink()
    if not (manifest.harness_home and manifest.codex_config):
        return notes
    codex_home = Path(manifest.harness_home)
    config = codex_home / CODEX_CONFIG
    try:
        if manifest.codex_config == SHARED:
            _release_codex(codex_home, manifest.session, session_folder.parent)
        elif manifest.codex_config == "absent":
            config.unlink(missing_ok=True)
        else:
            write_private_file(config, (session_folder / _KEPT_CONFIG).read_bytes())
    except (OSError, ProjectionRefused, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        notes.append(f"the Codex config {config} could not be put back ({error})")
    return notes
