"""What a session sets up in its harness's own home so the runtime's address and grant reach the harness's tools.

Codex runs its shell tools with its own environment policy, which drops variables whose names look like
secrets (`*TOKEN*`, `*KEY*`, `*SECRET*`): `$RESIDENT_GRANT_TOKEN` never reaches them. So every session also
gets its token in a private file in the harness's own folder (bound into the sandbox), named by
`$RESIDENT_GRANT_FILE`, a name no such filter drops; the `resident` command reads it when the variable itself
is absent. For Codex the session also writes, into the member's Codex home's `config.toml` (what was there
kept aside and put back when the session ends), the runtime's MCP server and a shell environment policy that
inherits the session's environment. The token file goes when the session ends.
"""

from __future__ import annotations

import contextlib
import tomllib
from pathlib import Path

import tomli_w

from resident.coordination.tokens import GRANT_FILE_ENV
from resident.errors import ProjectionRefused
from resident.files import write_private_file
from resident.runtime.sessions.tree import Manifest
from resident.sessions.projection import MCP_SERVER
from resident.store.home import HOME_ENV

__all__ = ["CODEX_CONFIG", "configure_codex", "restore_harness_home", "write_grant_file"]

CODEX_CONFIG = "config.toml"
_KEPT_CONFIG = "codex-config.original"


def write_grant_file(folder: Path, session: str, token: str) -> Path:
    """The session's grant token in a private file of `folder` (its harness's own, visible in the sandbox)."""
    path = folder / f".resident-grant-{session}"
    write_private_file(path, token.encode("ascii"))
    return path


def configure_codex(codex_home: Path, session_folder: Path, resident: tuple[str, ...], grant_file: Path,
                    home: Path) -> str:
    """Add the runtime's MCP server and an inheriting shell environment policy to the Codex home's config.toml;
    what was there before: "absent", or "kept" (its bytes kept in the session's folder)."""
    config = codex_home / CODEX_CONFIG
    try:
        original: bytes | None = config.read_bytes()
    except FileNotFoundError:
        original = None
    try:
        data = tomllib.loads(original.decode("utf-8")) if original else {}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ProjectionRefused(
            f"{config} does not read as TOML ({error}); fix or remove it, then start again"
        ) from None
    if original is not None:
        write_private_file(session_folder / _KEPT_CONFIG, original)
    servers = data.setdefault("mcp_servers", {})
    program, *arguments = resident
    servers[MCP_SERVER] = {
        "command": program, "args": [*arguments, "mcp", "serve"],
        "env": {GRANT_FILE_ENV: str(grant_file), HOME_ENV: str(home)},
    }
    # The shell tools see the session's environment (the grant file's name among it): Codex's default is that.
    data.setdefault("shell_environment_policy", {}).setdefault("inherit", "all")
    codex_home.mkdir(parents=True, exist_ok=True)
    write_private_file(config, tomli_w.dumps(data).encode("utf-8"))
    return "absent" if original is None else "kept"


def restore_harness_home(manifest: Manifest, session_folder: Path) -> list[str]:
    """Remove the session's token file and put the Codex config back; notes on what could not be."""
    notes: list[str] = []
    if manifest.grant_file:
        with contextlib.suppress(FileNotFoundError):
            Path(manifest.grant_file).unlink()
    if manifest.harness_home and manifest.codex_config:
        config = Path(manifest.harness_home) / CODEX_CONFIG
        try:
            if manifest.codex_config == "absent":
                config.unlink(missing_ok=True)
            else:
                write_private_file(config, (session_folder / _KEPT_CONFIG).read_bytes())
        except OSError as error:
            notes.append(f"the Codex config {config} could not be put back ({error})")
    return notes
