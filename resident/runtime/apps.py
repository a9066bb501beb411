"""`rt.apps`: the app surface — app and workspace banks, and memories in them.

Apps may create only `APP_PRIVATE` and `WORKSPACE_PRIVATE` banks (CreateBank); the members'
banks are the runtime's. An app sees and writes only its own `APP_PRIVATE` banks, a workspace
only its own `WORKSPACE_PRIVATE` banks, through the same visibility rules members are held to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from resident.config import validate_name
from resident.errors import InvalidInput, NotVisible, ScopeNotAllowed, UnknownBank
from resident.ids import new_id
from resident.memory.banks import APP_SCOPES, app_bank, parse_scope
from resident.memory.records import make_record
from resident.memory.visibility import can_see_bank, can_write
from resident.messages.memory import Bank, BankCreated, Principal, RecallHit, Receipt, RecordAdmitted
from resident.messages.store import Commit
from resident.runtime.member import ActivationLike, as_activation, recall_message
from resident.store.tables import BANKS

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = ["Apps"]


def _principal(owner: str, scope: str, refusal: type[InvalidInput | ScopeNotAllowed] = InvalidInput) -> Principal:
    checked = parse_scope(scope)
    if checked not in APP_SCOPES:
        raise refusal(f"the app surface works with APP_PRIVATE or WORKSPACE_PRIVATE banks, not {checked}")
    kind: Literal["app", "workspace"] = "app" if checked == "APP_PRIVATE" else "workspace"
    return Principal(kind=kind, name=validate_name(kind, owner))


class Apps:
    """Banks and memories of apps and workspaces."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def create_bank(self, app_or_workspace: str, scope: str, name: str) -> Bank:
        """Create an APP_PRIVATE or WORKSPACE_PRIVATE bank (`ScopeNotAllowed` for any other scope)."""
        self._runtime.check_open()
        bank = app_bank(app_or_workspace, parse_scope(scope), name, at=self._runtime.clock.time())
        self._runtime._internal.write(Commit(events=(BankCreated(at=bank.created_at, bank=bank),)))
        with self._runtime._internal.store.reader() as reader:
            created = reader.get(BANKS, bank.name)
        return created if created is not None else bank

    def banks(self, app_or_workspace: str, scope: str = "APP_PRIVATE") -> list[Bank]:
        """The banks this app (or workspace) owns and can see."""
        self._runtime.check_open()
        principal = _principal(app_or_workspace, scope)
        with self._runtime._internal.store.reader() as reader:
            return [bank for _, bank in reader.items(BANKS) if can_see_bank(principal, bank)]

    def remember(
        self,
        app_or_workspace: str,
        bank: str,
        text: str | bytes,
        *,
        summary: str | None = None,
        kind: str = "world",
        importance: float = 0.5,
        confidence: float = 1.0,
        activation: ActivationLike = None,
        timeout: float | None = None,
    ) -> Receipt:
        """Store a memory in one of the app's own banks (by full name, e.g. `app_private/notes/cache`)."""
        runtime = self._runtime
        runtime.check_open()
        runtime.memory.require_enabled()
        with runtime._internal.store.reader() as reader:
            target = reader.get(BANKS, bank)
        if target is None:
            raise UnknownBank(f"no bank named {bank}; create it with rt.apps.create_bank(...)")
        # A member's or a world's bank is not the app's to write, whatever its name.
        principal = _principal(app_or_workspace, target.scope, ScopeNotAllowed)
        if not can_write(principal, target):
            raise NotVisible(f"{bank} belongs to {target.owner}, not to {app_or_workspace}")
        now = runtime.clock.time()
        record = make_record(
            record_id=new_id("mem"), owner=target.owner, scope=target.scope, bank=target.name, text=text,
            summary=summary, kind=kind, counterpart=None, world=None, importance=importance,
            importance_reason="", confidence=confidence, activation=as_activation(activation), supersedes=None,
            canonical=False, delegated=False, source=f"app:{app_or_workspace}", occurred_at=None, cites=(),
            now=now, author=app_or_workspace,
        )
        receipt = Receipt(id=record.id, bank=record.bank, replication=record.replication, recorded_at=now)
        answer: Receipt = runtime._internal.write(
            Commit(events=(RecordAdmitted(at=now, record=record),), answer=receipt), timeout
        )
        return answer

    def recall(
        self,
        app_or_workspace: str,
        query: str | bytes,
        k: int = 10,
        *,
        scope: str = "APP_PRIVATE",
        activation: ActivationLike = None,
        char_budget: int = 8_000,
        timeout: float | None = None,
    ) -> list[RecallHit]:
        """Recall from the app's (or workspace's) own banks only."""
        runtime = self._runtime
        runtime.check_open()
        principal = _principal(app_or_workspace, scope)
        message = recall_message(query, k, activation=activation, char_budget=char_budget, principal=principal)
        runtime.memory.require_enabled()
        hits: list[RecallHit] = runtime._internal.wiring.substrate.ask(message, timeout)
        return hits
