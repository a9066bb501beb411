"""Static configuration of a home: `resident.toml` (the team roster, worlds, the Realm URL).

Runtime state (whether memory is on, which embedder) lives in LMDB with its events; this file
only holds what a person edits, and `[memory] embedder` only names the embedder `resident memory
enable` admits when none is given. A missing file means the defaults: the spec's team of five, all
in one world named `team`, and no Realm. A malformed file is a `ConfigError` naming the line.
"""

from __future__ import annotations

import json
import re
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resident.errors import ConfigError, InvalidInput, UnknownMember
from resident.realm.client import realm_base_url
from resident.store.home import CONFIG_FILE, ensure_home, write_private_file

__all__ = [
    "DEFAULT_TEAM",
    "DEFAULT_WORLD",
    "Config",
    "MemberConfig",
    "default_config",
    "load_config",
    "render_config",
    "scratch_home",
    "team_of",
    "validate_name",
]

DEFAULT_WORLD = "team"
DEFAULT_TEAM: tuple[tuple[str, str], ...] = (
    ("samuel", "planning"),
    ("deven", "development"),
    ("alice", "testing"),
    ("oliver", "operations"),
    ("victor", "trading"),
)
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def validate_name(kind: str, name: str) -> str:
    """A member, world, app or workspace name: lower case, starts with a letter, at most 32 chars."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"{kind} name {name!r} is not valid: use 1-32 lower-case letters, digits, '-' or '_', "
            "starting with a letter"
        )
    return name


@dataclass(frozen=True)
class MemberConfig:
    """One member of the roster."""

    name: str
    role: str
    worlds: tuple[str, ...] = (DEFAULT_WORLD,)


@dataclass(frozen=True)
class Config:
    """The parsed `resident.toml` (or the defaults)."""

    members: tuple[MemberConfig, ...]
    coordinator: str
    realm_url: str | None = None
    path: Path | None = None
    extra_members: tuple[MemberConfig, ...] = field(default=())
    # `[memory] embedder`: what enabling memory admits when no embedder is named.
    memory_embedder: str = "hash"

    def member(self, name: str) -> MemberConfig:
        for member in (*self.members, *self.extra_members):
            if member.name == name:
                return member
        known = ", ".join(self.member_names())
        raise UnknownMember(f"no member named {name!r}; the roster is: {known}")

    def member_names(self) -> list[str]:
        return [m.name for m in (*self.members, *self.extra_members)]

    def with_realm(self, url: str | None) -> Config:
        """The same configuration with another Realm URL (None: no replication)."""
        return Config(self.members, self.coordinator, url, self.path, self.extra_members, self.memory_embedder)

    def with_imported(self, imported: list[MemberConfig]) -> Config:
        """The roster plus members that joined this home by `member import`."""
        known = {m.name for m in self.members}
        extra = tuple(m for m in imported if m.name not in known)
        return Config(self.members, self.coordinator, self.realm_url, self.path, extra, self.memory_embedder)


def default_config(path: Path | None = None) -> Config:
    return Config(
        members=tuple(MemberConfig(name, role) for name, role in DEFAULT_TEAM),
        coordinator="samuel",
        path=path,
    )


def team_of(size: int) -> Config:
    """A roster of `size` members: the default team first, then `member06`, `member07`, ..."""
    if size < 1:
        raise InvalidInput("a team needs at least one member")
    extra = [(f"member{n:02d}", "development") for n in range(len(DEFAULT_TEAM) + 1, size + 1)]
    team = list(DEFAULT_TEAM[:size]) + extra
    return Config(members=tuple(MemberConfig(name, role) for name, role in team), coordinator=team[0][0])


def scratch_home(prefix: str, team: Config) -> Path:
    """A new, private home in the temporary directory, with `team` as its `resident.toml`."""
    home = ensure_home(Path(tempfile.mkdtemp(prefix=prefix)) / "home")
    write_private_file(home / CONFIG_FILE, render_config(team).encode("utf-8"))
    return home


def load_config(path: Path) -> Config:
    """Read `resident.toml`; the defaults when it does not exist."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return default_config(path)
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not valid UTF-8 (byte {error.start}); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as error:
        # tomllib's message already names the line and column ("... (at line 3, column 7)").
        raise ConfigError(f"{path} is not valid TOML: {error}") from None
    return _parse(data, path)


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: `{key}` must be a table ([{key}])")
    return value


def _unknown(section: str, data: dict[str, Any], allowed: set[str], path: Path) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key `{unknown[0]}` in {section}; allowed: {', '.join(sorted(allowed))}"
        )


def _parse(data: dict[str, Any], path: Path) -> Config:
    _unknown("the top level", data, {"team", "members", "realm", "memory"}, path)
    team = _table(data, "team", path)
    _unknown("[team]", team, {"coordinator"}, path)
    members_table = _table(data, "members", path)
    members: list[MemberConfig] = []
    for name, body in members_table.items():
        validate_name("member", name)
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: [members.{name}] must be a table with `role` and `worlds`")
        _unknown(f"[members.{name}]", body, {"role", "worlds"}, path)
        role = body.get("role", "member")
        worlds = body.get("worlds", [DEFAULT_WORLD])
        if not isinstance(role, str):
            raise ConfigError(f"{path}: [members.{name}] role must be a string")
        if not isinstance(worlds, list) or not all(isinstance(w, str) for w in worlds):
            raise ConfigError(f"{path}: [members.{name}] worlds must be a list of names")
        members.append(MemberConfig(name, role, tuple(validate_name("world", w) for w in worlds)))
    if not members:
        members = list(default_config().members)
    coordinator = team.get("coordinator", "samuel" if any(m.name == "samuel" for m in members) else members[0].name)
    if not isinstance(coordinator, str) or coordinator not in {m.name for m in members}:
        raise ConfigError(f"{path}: [team] coordinator {coordinator!r} is not one of the [members]")
    realm = _table(data, "realm", path)
    _unknown("[realm]", realm, {"url"}, path)
    url = realm.get("url")
    if url is not None:
        if not isinstance(url, str):
            raise ConfigError(f"{path}: [realm] url must be a string like \"http://127.0.0.1:8765\"")
        try:
            url = realm_base_url(url)
        except InvalidInput as error:
            raise ConfigError(f"{path}: [realm] {error}") from None
    memory = _table(data, "memory", path)
    _unknown("[memory]", memory, {"embedder"}, path)
    embedder = memory.get("embedder", "hash")
    if not isinstance(embedder, str) or not embedder.strip():
        raise ConfigError(f'{path}: [memory] embedder must be "hash", "local" or a loopback URL')
    return Config(
        members=tuple(members), coordinator=coordinator, realm_url=url, path=path, memory_embedder=embedder.strip()
    )


def render_config(config: Config) -> str:
    """The TOML text `resident init` writes for `config`."""
    # JSON string escapes are valid TOML basic strings, so json.dumps quotes safely.
    lines = [
        "# resident home configuration: the team roster and the Realm server.",
        "# Runtime state (memory on/off, the embedder) is not here: use `resident memory ...`.",
        "",
        "[team]",
        f"coordinator = {json.dumps(config.coordinator)}",
        "",
    ]
    for member in config.members:
        worlds = ", ".join(json.dumps(w) for w in member.worlds)
        lines += [f"[members.{member.name}]", f"role = {json.dumps(member.role)}", f"worlds = [{worlds}]", ""]
    if config.realm_url:
        lines += ["[realm]", f"url = {json.dumps(config.realm_url)}", ""]
    return "\n".join(lines)
