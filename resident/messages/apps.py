"""The app surface's requests and replies: app and workspace banks (the seeds' CreateBank) and their memories.

An app (or a workspace) names itself in every request; the runtime holds it to its own banks
(`resident.memory.visibility`). These structs are at once `rt.apps`' signatures, the loopback API's
bodies and its OpenAPI schemas (`resident.operations.apps`).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from resident.messages.bounds import Budget, Name, RecallK, Seconds, Text, Unit
from resident.messages.memory import Activation, Bank, Kind, RecallHit

__all__ = ["AppBanks", "AppBanksQuery", "AppRecall", "AppRecallHits", "AppRemember", "AppScope", "CreateAppBank"]

AppScope = Literal["APP_PRIVATE", "WORKSPACE_PRIVATE"]


class _AppRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request of the app surface: unknown fields are refused rather than ignored."""


class CreateAppBank(_AppRequest, frozen=True):
    """A bank of `scope` named `name`, owned by the app (APP_PRIVATE) or workspace (WORKSPACE_PRIVATE)
    `app_or_workspace`. Creating it again changes nothing; any other scope is refused (`ScopeNotAllowed`).
    """

    app_or_workspace: Name
    scope: Name
    name: Name


class AppBanksQuery(_AppRequest, frozen=True):
    """The banks the app (APP_PRIVATE) or workspace (WORKSPACE_PRIVATE) `app_or_workspace` owns."""

    app_or_workspace: Name
    scope: Name = "APP_PRIVATE"


class AppBanks(msgspec.Struct, frozen=True, kw_only=True):
    """An app's or workspace's banks."""

    banks: tuple[Bank, ...]


class _AppRememberPlace(_AppRequest, frozen=True):
    app_or_workspace: Name
    # The bank's full name, e.g. `app_private/notes/cache` (as `create_bank` answered it).
    bank: Name
    text: Text


class AppRemember(_AppRememberPlace, frozen=True, kw_only=True):
    """A memory in one of the app's own banks; the receipt says when it is durable and its replication state."""

    summary: Text | None = None
    kind: Kind = "world"
    importance: Unit = 0.5
    confidence: Unit = 1.0
    activation: Activation | None = None
    timeout: Seconds | None = None


class _AppRecallQuery(_AppRequest, frozen=True):
    app_or_workspace: Name
    query: Text
    k: RecallK = 10


class AppRecall(_AppRecallQuery, frozen=True, kw_only=True):
    """Recall from the app's (or workspace's) own banks of `scope` only: at most `k` hits within
    `char_budget` characters."""

    scope: Name = "APP_PRIVATE"
    activation: Activation | None = None
    char_budget: Budget = 8_000
    timeout: Seconds | None = None


class AppRecallHits(msgspec.Struct, frozen=True, kw_only=True):
    """The hits of an app's recall, best first."""

    hits: tuple[RecallHit, ...]
