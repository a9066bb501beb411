"""`[cognition]` in resident.toml: which independent service the bridge reaches, and which of its banks stands
for which member or world.

    [cognition]
    provider = "hindsight"                 # "none" (the default): no bridge, the runtime answers alone
    url = "http://127.0.0.1:8888"          # loopback only
    token_file = "hindsight.token"         # relative to the home; its text is sent as a bearer token
    deadline = 2.0                         # seconds a recall waits for the service
    supervise = false                      # true: the runtime starts `command` and restarts it when it dies

    [[cognition.banks]]
    bank = "deven-notes"                   # the service's bank id
    member = "deven"                       # or: world = "team"
    retain = false                         # true: the owner may write the member's served memories to it
    domain = "work"                        # optional: its memories count as recalled only in this domain
    project = "resident"                   # optional: ... and this project (engagement narrows as for memory)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["PROVIDERS", "BankBinding", "CognitionSettings"]

PROVIDERS = ("none", "hindsight")


@dataclass(frozen=True, slots=True)
class BankBinding:
    """One bank of the service and whom it stands for: one member, or one world (every member of it)."""

    bank: str
    member: str | None = None
    world: str | None = None
    retain: bool = False
    # The activation its memories are taken to have: the member's engagement narrows them as it does a record's.
    domain: Literal["work", "personal"] | None = None
    project: str | None = None

    def stands_for(self, member: str, worlds: tuple[str, ...]) -> bool:
        return self.member == member or (self.world is not None and self.world in worlds)


@dataclass(frozen=True, slots=True)
class CognitionSettings:
    provider: Literal["none", "hindsight"] = "none"
    url: str = ""
    token_file: str | None = None
    deadline: float = 2.0
    # The circuit breaker: this many failures in a row open it for `cooldown` seconds of the runtime's clock.
    failures: int = 3
    cooldown: float = 30.0
    supervise: bool = False
    # What the runtime runs when it supervises the service, and the environment it adds for it.
    command: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    banks: tuple[BankBinding, ...] = ()

    @property
    def bridged(self) -> bool:
        return self.provider != "none"

    def banks_for(self, member: str, worlds: tuple[str, ...]) -> tuple[BankBinding, ...]:
        """The banks that stand for `member` or one of its worlds (a recall asks each of them)."""
        return tuple(binding for binding in self.banks if binding.stands_for(member, worlds))

    def own_bank(self, member: str) -> BankBinding | None:
        """The bank that stands for `member` alone (where its optional operations and retained memories go)."""
        return next((binding for binding in self.banks if binding.member == member), None)
