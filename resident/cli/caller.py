"""Who runs a `resident` command: the owner, or a member session (`$RESIDENT_GRANT_TOKEN` is set).

Every command is the owner's unless it is listed in `MEMBER_COMMANDS`: with a grant token in the
environment, any other command is refused with `OwnerOnlyAction` before it does anything, so a
command added later is owner-only until someone decides otherwise. A listed command runs its
operations with the token presented (`resident.cli.target`): in-process or by the server of a
running `resident up`, the token is resolved to its session (`GrantInvalid` when it stands for
none) and the operation acts as that member under its grant; an owner's operation refuses it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import click

__all__ = ["MEMBER_COMMANDS", "guard_command"]

# What a member session may run, by command path. Each acts as the session's member, under its grant.
MEMBER_COMMANDS: frozenset[tuple[str, ...]] = frozenset({
    ("remember",),
    ("recall",),
    ("reconcile",),
    ("memory", "show"),
    ("memory", "forget"),
    ("skills", "read"),
    ("skills", "search"),
    ("skills", "list"),
    ("skills", "reclaim"),
    ("skills", "add"),
    ("principles", "propose"),
    ("principles", "list"),
    ("engage",),
    ("engagement", "show"),
    ("evolution", "log"),
    # The MCP server takes its subject from the session's grant itself (never from tool arguments).
    ("mcp", "serve"),
    ("mcp", "call"),
    # A member reads its own experience; another member's sessions are unknown to it.
    ("session", "list"),
    ("session", "show"),
    # The cognition service acts as the session's own member, within its grant, as recall does.
    ("cognition", "recall"),
    ("cognition", "context"),
    ("cognition", "capabilities"),
    # A coordinator's session (its grant holds `dispatch`) coordinates within its grant; the operations refuse
    # any other member session (GrantExceeded) and a coordinator what it did not dispatch.
    ("dispatch",),
    ("executions",),
    ("await",),
    ("accept",),
    ("reject",),
})


def _guarded(callback: Callable[..., Any], path: tuple[str, ...]) -> Callable[..., Any]:
    what = f"`resident {' '.join(path)}`"

    @functools.wraps(callback)
    def guard(*args: Any, **kwargs: Any) -> Any:
        # Imported when a command runs: `resident --help` needs none of it.
        from resident.runtime.caller import presented_token, refuse_member_session  # noqa: PLC0415 - loaded only when this runs

        refuse_member_session(presented_token(os.environ), what)
        return callback(*args, **kwargs)

    guard.owner_only = what  # type: ignore[attr-defined]  # tells a guarded command apart (tests)
    return guard


def guard_command(command: click.Command, path: tuple[str, ...]) -> None:
    """Make `command` (at `path`), or every command under it, refuse a member session unless in `MEMBER_COMMANDS`."""
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            guard_command(sub, (*path, name))
    elif path not in MEMBER_COMMANDS and command.callback is not None:
        command.callback = _guarded(command.callback, path)
