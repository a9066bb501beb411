"""The app surface's services: app and workspace banks (the seeds' CreateBank), and memories in them.

Apps may create only `APP_PRIVATE` and `WORKSPACE_PRIVATE` banks; the members' banks are the
runtime's. An app sees and writes only its own `APP_PRIVATE` banks, a workspace only its own
`WORKSPACE_PRIVATE` banks, through the same visibility rules members are held to. Declared in
`resident.operations.apps`.
"""

from __future__ import annotations

from typing import Literal

from resident.config import validate_name
from resident.errors import ConfigError, InvalidInput, NotVisible, ScopeNotAllowed, UnknownBank
from resident.ids import new_id
from resident.memory.banks import APP_SCOPES, app_bank, parse_scope
from resident.memory.records import as_activation, make_record
from resident.memory.requests import recall_message
from resident.memory.visibility import can_see_bank, can_write
from resident.messages.apps import AppBanks, AppBanksQuery, AppRecall, AppRecallHits, AppRemember, CreateAppBank
from resident.messages.memory import Bank, BankCreated, Principal, RecallHit, Receipt, RecordAdmitted
from resident.messages.store import Commit
from resident.runtime.context import Call, Context
from resident.store.tables import BANKS

__all__ = ["banks", "create_bank", "recall", "remember"]


def _principal(owner: str, scope: str, refusal: type[InvalidInput | ScopeNotAllowed] = InvalidInput) -> Principal:
    checked = parse_scope(scope)
    if checked not in APP_SCOPES:
        raise refusal(f"the app surface works with APP_PRIVATE or WORKSPACE_PRIVATE banks, not {checked}")
    kind: Literal["app", "workspace"] = "app" if checked == "APP_PRIVATE" else "workspace"
    try:
        return Principal(kind=kind, name=validate_name(kind, owner))
    except ConfigError as error:
        # The name comes with the request, not from resident.toml: the caller's input is what is wrong.
        raise InvalidInput(error.message) from None


def create_bank(context: Context, _call: Call, request: CreateAppBank) -> Bank:
    """Create an APP_PRIVATE or WORKSPACE_PRIVATE bank (`ScopeNotAllowed` for any other scope)."""
    context.check_open()
    bank = app_bank(request.app_or_workspace, parse_scope(request.scope), request.name, at=context.clock.time())
    context.write(Commit(events=(BankCreated(at=bank.created_at, bank=bank),)))
    with context.store.reader() as reader:
        created = reader.get(BANKS, bank.name)
    return created if created is not None else bank


def banks(context: Context, _call: Call, request: AppBanksQuery) -> AppBanks:
    """The banks this app (or workspace) owns and can see."""
    context.check_open()
    principal = _principal(request.app_or_workspace, request.scope)
    with context.store.reader() as reader:
        return AppBanks(banks=tuple(bank for _, bank in reader.items(BANKS) if can_see_bank(principal, bank)))


def remember(context: Context, _call: Call, request: AppRemember) -> Receipt:
    """Store a memory in one of the app's own banks (by full name, e.g. `app_private/notes/cache`)."""
    context.check_open()
    context.require_memory()
    with context.store.reader() as reader:
        target = reader.get(BANKS, request.bank)
    if target is None:
        raise UnknownBank(f"no bank named {request.bank}; create it first (rt.apps.create_bank(...))")
    # A member's or a world's bank is not the app's to write, whatever its name.
    owner = request.app_or_workspace
    principal = _principal(owner, target.scope, ScopeNotAllowed)
    if not can_write(principal, target):
        raise NotVisible(f"{request.bank} belongs to {target.owner}, not to {owner}")
    now = context.clock.time()
    record = make_record(
        record_id=new_id("mem"), owner=target.owner, scope=target.scope, bank=target.name, text=request.text,
        summary=request.summary, kind=request.kind, counterpart=None, world=None, importance=request.importance,
        importance_reason="", confidence=request.confidence, activation=as_activation(request.activation),
        supersedes=None, canonical=False, delegated=False, source=f"app:{owner}", occurred_at=None, cites=(),
        now=now, author=owner,
    )
    receipt = Receipt(id=record.id, bank=record.bank, replication=record.replication, recorded_at=now)
    answer: Receipt = context.write(
        Commit(events=(RecordAdmitted(at=now, record=record),), answer=receipt), request.timeout
    )
    return answer


def recall(context: Context, _call: Call, request: AppRecall) -> AppRecallHits:
    """Recall from the app's (or workspace's) own banks only."""
    context.check_open()
    principal = _principal(request.app_or_workspace, request.scope)
    message = recall_message(
        request.query, request.k, activation=request.activation, char_budget=request.char_budget, principal=principal
    )
    context.require_memory()
    hits: list[RecallHit] = context.substrate.ask(message, request.timeout)
    return AppRecallHits(hits=tuple(hits))
