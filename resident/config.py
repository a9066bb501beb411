"""Static configuration of a home: `resident.toml` (the team roster, worlds, the Realm URL, entry rules).

Runtime state (whether memory is on, which embedder) lives in LMDB with its events; this file
only holds what a person edits, and `[memory] embedder` only names the embedder `resident memory
enable` admits when none is given. A missing file means the defaults: the spec's team of five, all
in one world named `team`, and no Realm. A malformed file is a `ConfigError` naming the line;
an empty one, a directory in its place, or a key this version does not know is one too.

The file is read by msgspec into structs that forbid unknown fields, and written by tomli-w, so
any text a person may put in it (a role with an emoji, quotes, control characters) comes back as
it went in.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import msgspec
import tomli_w

from resident.cognition.settings import PROVIDERS, BankBinding, CognitionSettings
from resident.engagement.rules import EngagementConfig, engagement_table, parse_engagement
from resident.errors import ConfigError, InvalidInput, UnknownMember, shorten
from resident.loopback import is_loopback_host
from resident.realm.urls import realm_base_url
from resident.store.home import CONFIG_FILE, ensure_home, write_private_file

__all__ = [
    "DEFAULT_TEAM",
    "DEFAULT_WORLD",
    "Config",
    "KnowledgeConfig",
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
            f"{kind} name {shorten(name)} is not valid: use 1-32 lower-case letters, digits, '-' or '_', "
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
class KnowledgeConfig:
    """`[knowledge]`: verified knowledge, knowledge banks and the MCP tool are off unless `enabled`."""

    enabled: bool = False


@dataclass(frozen=True)
class Config:
    """The parsed `resident.toml` (or the defaults)."""

    members: tuple[MemberConfig, ...]
    coordinator: str
    realm_url: str | None = None
    path: Path | None = None
    # `[realm] ca_file`: pin Realm's CA (a path as written; relative ones are read from the home).
    realm_ca_file: str | None = None
    extra_members: tuple[MemberConfig, ...] = field(default=())
    engagement: EngagementConfig = field(default_factory=EngagementConfig)
    knowledge: KnowledgeConfig = field(default_factory=KnowledgeConfig)
    # `[memory] embedder`: what enabling memory admits when no embedder is named.
    memory_embedder: str = "hash"
    # `[sessions] sandbox`: a member's harness runs hidden from the home (see `resident.runtime.sessions.sandbox`).
    session_sandbox: bool = True
    # `[cognition]`: the bridge to an independent Cognition service (none by default; docs/cognition.md).
    cognition: CognitionSettings = field(default_factory=CognitionSettings)
    # `[sessions] max_running`: how many dispatched executions the runtime runs at once; the rest wait their turn.
    max_running: int = 2
    # `[sessions] harness_transcripts`: what becomes of the harness's own copies of a recovered transcript.
    harness_transcripts: Literal["redact", "keep", "remove"] = "redact"

    def member(self, name: str) -> MemberConfig:
        for member in (*self.members, *self.extra_members):
            if member.name == name:
                return member
        known = ", ".join(self.member_names())
        raise UnknownMember(f"no member named {shorten(name)}; the roster is: {known}")

    def member_names(self) -> list[str]:
        return [m.name for m in (*self.members, *self.extra_members)]

    def with_realm(self, url: str | None) -> Config:
        """The same configuration with another Realm URL (None: no replication)."""
        return replace(self, realm_url=url)

    def with_imported(self, imported: list[MemberConfig]) -> Config:
        """The roster plus members that joined this home by `member import`."""
        known = {m.name for m in self.members}
        extra = tuple(m for m in imported if m.name not in known)
        return replace(self, extra_members=extra)


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


def scratch_home(prefix: str, team: Config, parent: Path | None = None) -> Path:
    """A new, private home in the temporary directory (or in `parent`), with `team` as its `resident.toml`."""
    home = ensure_home(Path(tempfile.mkdtemp(prefix=prefix, dir=parent)) / "home")
    write_private_file(home / CONFIG_FILE, render_config(team).encode("utf-8"))
    return home


class _MemberTable(msgspec.Struct, forbid_unknown_fields=True):
    role: str = "member"
    worlds: list[str] = msgspec.field(default_factory=lambda: [DEFAULT_WORLD])


class _TeamTable(msgspec.Struct, forbid_unknown_fields=True):
    coordinator: str | None = None


class _RealmTable(msgspec.Struct, forbid_unknown_fields=True):
    url: str | None = None
    # A PEM bundle of the only CAs the home trusts for Realm (relative to the home); see docs/realm.md.
    ca_file: str | None = None


class _KnowledgeTable(msgspec.Struct, forbid_unknown_fields=True):
    enabled: bool = False


class _MemoryTable(msgspec.Struct, forbid_unknown_fields=True):
    embedder: str = "hash"


class _SessionsTable(msgspec.Struct, forbid_unknown_fields=True):
    sandbox: bool = True
    max_running: Annotated[int, msgspec.Meta(ge=1, le=64)] = 2
    harness_transcripts: Literal["redact", "keep", "remove"] = "redact"


class _BankTable(msgspec.Struct, forbid_unknown_fields=True):
    bank: str
    member: str | None = None
    world: str | None = None
    retain: bool = False
    domain: Literal["work", "personal"] | None = None
    project: str | None = None


class _CognitionTable(msgspec.Struct, forbid_unknown_fields=True):
    provider: str = "none"
    url: str = ""
    token_file: str | None = None
    deadline: float = 2.0
    failures: int = 3
    cooldown: float = 30.0
    supervise: bool = False
    command: list[str] = msgspec.field(default_factory=list)
    environment: dict[str, str] = msgspec.field(default_factory=dict)
    banks: list[_BankTable] = msgspec.field(default_factory=list)


class _ConfigFile(msgspec.Struct, forbid_unknown_fields=True):
    """`resident.toml` as it is written: [team], [members.NAME], [realm], [memory], [engagement], [knowledge]."""

    team: _TeamTable = msgspec.field(default_factory=_TeamTable)
    members: dict[str, _MemberTable] = msgspec.field(default_factory=dict)
    realm: _RealmTable = msgspec.field(default_factory=_RealmTable)
    # Entry rules have checks of their own (a rule needs a condition and an outcome), so the
    # engagement module reads this table and names what is wrong in it.
    engagement: dict[str, Any] | None = None
    knowledge: _KnowledgeTable = msgspec.field(default_factory=_KnowledgeTable)
    memory: _MemoryTable = msgspec.field(default_factory=_MemoryTable)
    sessions: _SessionsTable = msgspec.field(default_factory=_SessionsTable)
    cognition: _CognitionTable = msgspec.field(default_factory=_CognitionTable)


_HEADER = (
    "# resident home configuration: the team roster and the Realm server.\n"
    "# Runtime state (memory on/off, the embedder) is not here: use `resident memory ...`.\n\n"
)
_ALLOWED = {
    "the top level": "team, members, realm, memory, engagement, knowledge, sessions, cognition",
    "[team]": "coordinator",
    "[realm]": "url, ca_file",
    "[knowledge]": "enabled",
    "[memory]": "embedder",
    "[sessions]": "sandbox, max_running, harness_transcripts",
    "[cognition]": "provider, url, token_file, deadline, failures, cooldown, supervise, command, environment, banks",
}


def load_config(path: Path) -> Config:
    """Read `resident.toml`; the defaults when it does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return default_config(path)
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not a configuration file; remove it or rename it") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not valid UTF-8 (byte {error.start}); save it as UTF-8") from None
    try:
        raw = msgspec.toml.decode(text)
        parsed = msgspec.toml.decode(text, type=_ConfigFile)
    except msgspec.ValidationError as error:
        raise ConfigError(f"{path}: {_explain(str(error), raw)}") from None
    except msgspec.DecodeError as error:
        # The TOML parser's message already names the line and column ("... (at line 3, column 7)").
        raise ConfigError(f"{path} is not valid TOML: {error}") from None
    if not raw:
        raise ConfigError(
            f"{path} is empty; delete it to use the default team, or write one with `resident init --force`"
        )
    return _parse(parsed, path)


# What a value of each TOML type looks like, for a key that holds a value of another type.
_KINDS = {
    "bool": "true or false",
    "str": 'a string in quotes ("...")',
    "array": 'a list like ["a", "b"]',
    "object": "a table",
}


def _explain(message: str, raw: dict[str, object]) -> str:
    """msgspec's validation message, with its location written as the TOML table a person edits."""
    problem, _, where = message.partition(" - at `")
    where = where.rstrip("`")
    if where.startswith("$.members[...]"):
        name = _member_at_fault(raw)
        table = f"[members.{name}]" if name else "a [members.NAME] table"
        field_name = where.removeprefix("$.members[...]").lstrip(".")
        location, allowed = (f"{table} {field_name}" if field_name else table), "role, worlds"
    elif where:
        parts = where.removeprefix("$.").split(".")
        location = f"[{parts[0]}]" + (f" {'.'.join(parts[1:])}" if parts[1:] else "")
        allowed = _ALLOWED.get(f"[{parts[0]}]", "")
    else:
        location, allowed = "the top level", _ALLOWED["the top level"]
    if problem.startswith("Object contains unknown field"):
        key = problem.removeprefix("Object contains unknown field ").strip()
        return f"unknown key {key} in {location}; allowed: {allowed}"
    expected = problem.partition(",")[0].removeprefix("Expected ").strip("`")
    if expected in _KINDS:
        return f"{location} must be {_KINDS[expected]} ({problem})"
    return f"{location}: {problem}"


def _member_at_fault(raw: dict[str, object]) -> str | None:
    """Which [members.NAME] table does not validate (msgspec's location does not say)."""
    members = raw.get("members")
    if not isinstance(members, dict):
        return None
    for name, body in members.items():
        try:
            msgspec.convert(body, _MemberTable)
        except msgspec.ValidationError:
            return str(name) if _NAME.match(str(name)) else shorten(name)
    return None


def _parse(data: _ConfigFile, path: Path) -> Config:
    try:
        members = [
            MemberConfig(
                validate_name("member", name), body.role, tuple(validate_name("world", w) for w in body.worlds)
            )
            for name, body in data.members.items()
        ]
    except ConfigError as error:
        raise ConfigError(f"{path}: {error.message}") from None
    if not members:
        members = list(default_config().members)
    names = {m.name for m in members}
    coordinator = data.team.coordinator or ("samuel" if "samuel" in names else members[0].name)
    if coordinator not in names:
        raise ConfigError(f"{path}: [team] coordinator {shorten(coordinator)} is not one of the [members]")
    url = data.realm.url
    if url is not None:
        try:
            url = realm_base_url(url)
        except InvalidInput as error:
            raise ConfigError(f"{path}: [realm] {error}") from None
    engagement = parse_engagement(data.engagement, str(path))
    embedder = data.memory.embedder.strip()
    if not embedder:
        raise ConfigError(f'{path}: [memory] embedder must be "hash", "local" or a loopback URL')
    return Config(
        members=tuple(members), coordinator=coordinator, realm_url=url, path=path, engagement=engagement,
        realm_ca_file=data.realm.ca_file,
        knowledge=KnowledgeConfig(enabled=data.knowledge.enabled), memory_embedder=embedder,
        session_sandbox=data.sessions.sandbox, max_running=data.sessions.max_running,
        harness_transcripts=data.sessions.harness_transcripts, cognition=_cognition(data.cognition, path),
    )


def _cognition(table: _CognitionTable, path: Path) -> CognitionSettings:
    """`[cognition]`, checked: a known provider, a loopback URL for it, sound numbers, banks that name one owner."""
    if table.provider not in PROVIDERS:
        raise ConfigError(
            f'{path}: [cognition] provider must be one of {", ".join(PROVIDERS)}, not {shorten(table.provider)}'
        )
    if table.provider != "none":
        parts = urlsplit(table.url)
        if parts.scheme not in ("http", "https") or not parts.hostname or not is_loopback_host(parts.hostname) \
                or parts.username is not None or parts.password is not None:
            raise ConfigError(
                f"{path}: [cognition] url must be an http URL on this machine (127.0.0.1, ::1 or localhost), "
                f"not {shorten(table.url)}"
            )
    if not 0.05 <= table.deadline <= 60.0:
        raise ConfigError(f"{path}: [cognition] deadline must be between 0.05 and 60 seconds, not {table.deadline}")
    if not 1 <= table.failures <= 1_000 or not 0.0 <= table.cooldown <= 86_400.0:
        raise ConfigError(f"{path}: [cognition] failures must be 1 to 1000 and cooldown 0 to 86400 seconds")
    if table.supervise and not table.command:
        raise ConfigError(f"{path}: [cognition] supervise = true needs the command that starts the service")
    return CognitionSettings(
        provider="hindsight" if table.provider == "hindsight" else "none", url=table.url.rstrip("/"),
        token_file=table.token_file, deadline=table.deadline, failures=table.failures, cooldown=table.cooldown,
        supervise=table.supervise, command=tuple(table.command), environment=dict(table.environment),
        banks=tuple(_binding(bank, path) for bank in table.banks),
    )


def _binding(table: _BankTable, path: Path) -> BankBinding:
    if (table.member is None) == (table.world is None):
        raise ConfigError(f"{path}: [[cognition.banks]] {shorten(table.bank)} must name a member or a world, not both")
    if not table.bank.strip() or len(table.bank) > 200:
        raise ConfigError(f"{path}: [[cognition.banks]] bank must be the service's bank id (1-200 characters)")
    try:
        member = validate_name("member", table.member) if table.member is not None else None
        world = validate_name("world", table.world) if table.world is not None else None
    except ConfigError as error:
        raise ConfigError(f"{path}: [[cognition.banks]] {error.message}") from None
    if table.project is not None and not 1 <= len(table.project) <= 200:
        raise ConfigError(f"{path}: [[cognition.banks]] project must be 1-200 characters")
    return BankBinding(
        bank=table.bank, member=member, world=world, retain=table.retain, domain=table.domain, project=table.project
    )


def render_config(config: Config) -> str:
    """The TOML text `resident init` writes for `config`."""
    document: dict[str, object] = {
        "team": {"coordinator": config.coordinator},
        "members": {m.name: {"role": m.role, "worlds": list(m.worlds)} for m in config.members},
    }
    if config.realm_url:
        document["realm"] = {"url": config.realm_url}
        if config.realm_ca_file:
            document["realm"] = {"url": config.realm_url, "ca_file": config.realm_ca_file}
    engagement = engagement_table(config.engagement)
    if engagement is not None:
        document["engagement"] = engagement
    if config.memory_embedder != "hash":
        document["memory"] = {"embedder": config.memory_embedder}
    if config.knowledge.enabled:
        document["knowledge"] = {"enabled": True}
    if config.cognition.bridged:
        document["cognition"] = _cognition_table(config.cognition)
    return _HEADER + tomli_w.dumps(document)


def _cognition_table(settings: CognitionSettings) -> dict[str, object]:
    table: dict[str, object] = {
        "provider": settings.provider, "url": settings.url, "deadline": settings.deadline,
        "failures": settings.failures, "cooldown": settings.cooldown, "supervise": settings.supervise,
        "command": list(settings.command), "environment": dict(settings.environment),
        "banks": [
            {"bank": b.bank, **({"member": b.member} if b.member else {"world": b.world or ""}), "retain": b.retain,
             **({"domain": b.domain} if b.domain else {}), **({"project": b.project} if b.project else {})}
            for b in settings.banks
        ],
    }
    if settings.token_file is not None:
        table["token_file"] = settings.token_file
    return table
