"""The app surface (`rt.apps`): a host's apps and workspaces create their own banks and use their memory.

Served on `/v1/apps/{app_or_workspace}/…` for a host that is not written in Python; a member session
may call none of them.
"""

from __future__ import annotations

from resident.messages.apps import AppBanks, AppBanksQuery, AppRecall, AppRecallHits, AppRemember, CreateAppBank
from resident.messages.memory import Bank, RecallHit, Receipt
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = ["BANKS", "CREATE_BANK", "OPERATIONS", "RECALL", "REMEMBER", "AppsSurface"]

_SERVICES = "resident.runtime.apps"


def _banks(reply: AppBanks) -> list[Bank]:
    return list(reply.banks)


def _hits(reply: AppRecallHits) -> list[RecallHit]:
    return list(reply.hits)


CREATE_BANK = declare(
    "apps.create_bank", "Create an app's or workspace's private bank (CreateBank)", CreateAppBank, Bank,
    route=Route("POST", "/v1/apps/{app_or_workspace}/banks"), service=f"{_SERVICES}:create_bank",
    access=Access.APP,
)
BANKS = declare(
    "apps.banks", "The banks an app or workspace owns", AppBanksQuery, AppBanks,
    route=Route("GET", "/v1/apps/{app_or_workspace}/banks"), service=f"{_SERVICES}:banks",
    access=Access.APP, result=_banks,
)
REMEMBER = declare(
    "apps.remember", "Store a memory in one of an app's own banks", AppRemember, Receipt,
    route=Route("POST", "/v1/apps/{app_or_workspace}/remember"), service=f"{_SERVICES}:remember",
    access=Access.APP,
)
RECALL = declare(
    "apps.recall", "Recall from an app's own banks", AppRecall, AppRecallHits,
    route=Route("POST", "/v1/apps/{app_or_workspace}/recall"), service=f"{_SERVICES}:recall",
    access=Access.APP, result=_hits,
)

OPERATIONS = (CREATE_BANK, BANKS, REMEMBER, RECALL)


class AppsSurface(Surface):
    """`rt.apps`: banks and memories of a host's apps and workspaces (APP_PRIVATE, WORKSPACE_PRIVATE)."""

    create_bank = method(CREATE_BANK)
    acreate_bank = awaitable(CREATE_BANK)
    banks = method(BANKS)
    abanks = awaitable(BANKS)
    remember = method(REMEMBER)
    aremember = awaitable(REMEMBER)
    recall = method(RECALL)
    arecall = awaitable(RECALL)
