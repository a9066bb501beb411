"""The facade's surfaces, each a list of operations: the same classes serve `Runtime.open` and `Runtime.connect`."""

from __future__ import annotations

from resident.operations import apps
from resident.operations.facade import Surface, awaitable, method

__all__ = ["AppsSurface"]


class AppsSurface(Surface):
    """`rt.apps`: banks and memories of a host's apps and workspaces (APP_PRIVATE, WORKSPACE_PRIVATE)."""

    create_bank = method(apps.CREATE_BANK)
    acreate_bank = awaitable(apps.CREATE_BANK)
    banks = method(apps.BANKS)
    abanks = awaitable(apps.BANKS)
    remember = method(apps.REMEMBER)
    aremember = awaitable(apps.REMEMBER)
    recall = method(apps.RECALL)
    arecall = awaitable(apps.RECALL)
