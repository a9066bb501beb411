"""Knowledge banks: their names, their owners, and who may use one.

A bank belongs to one member, app or workspace, written `member:deven`, `app:notes`,
`workspace:acme`; a bank created without an owner belongs to `workspace:default`. The owner alone
may read, search or ingest into it, like the memory banks of the same owners (a member's own
banks, an app's `APP_PRIVATE`, a workspace's `WORKSPACE_PRIVATE`). The home's owner, working
through the CLI or as the runtime's embedder, acts for every owner.
"""

from __future__ import annotations

from resident.errors import InvalidInput
from resident.memory.banks import check_part
from resident.messages.knowledge import KnowledgeBank, OwnerKind
from resident.messages.memory import Principal

__all__ = ["DEFAULT_OWNER", "OWNER_KINDS", "can_use", "format_owner", "knowledge_bank", "parse_owner"]

OWNER_KINDS: tuple[OwnerKind, ...] = ("member", "app", "workspace")
DEFAULT_OWNER = "workspace:default"


def parse_owner(value: str) -> tuple[OwnerKind, str]:
    """`member:deven` → ("member", "deven"); the kind must be member, app or workspace."""
    kind, separator, name = value.partition(":") if isinstance(value, str) else ("", "", "")
    for owner_kind in OWNER_KINDS:
        if separator and kind == owner_kind:
            return owner_kind, check_part(owner_kind, name)
    raise InvalidInput(f"owner {value!r} is not valid; write member:NAME, app:NAME or workspace:NAME")


def format_owner(bank: KnowledgeBank) -> str:
    return f"{bank.owner_kind}:{bank.owner}"


def knowledge_bank(name: str, owner: str, *, at: float) -> KnowledgeBank:
    """A bank named `name` (a valid name part) for `owner` (`member:deven`, ...)."""
    owner_kind, owner_name = parse_owner(owner)
    return KnowledgeBank(name=check_part("knowledge bank", name), owner_kind=owner_kind, owner=owner_name,
                         created_at=at)


def can_use(principal: Principal | None, bank: KnowledgeBank) -> bool:
    """Whether `principal` (None: the home's owner) may read or ingest into `bank`."""
    return principal is None or (principal.kind, principal.name) == (bank.owner_kind, bank.owner)
