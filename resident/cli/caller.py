"""Who runs a `resident` command: the owner, or a member session (`$RESIDENT_GRANT_TOKEN` is set).

Every command is the owner's unless it is listed in `MEMBER_COMMANDS`: with a grant token in the
environment, any other command is refused with `OwnerOnlyAction` before it does anything, so a
command added later is owner-only until someone decides otherwise. A listed command opens the
runtime with `open_as_caller`, which resolves the token to its session (`GrantInvalid` when it
stands for none) and hands the command a `Caller` that acts as that member under its grant.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from resident.cli.common import CliState, open_runtime
from resident.runtime import Runtime
from resident.runtime.caller import Caller, presented_token, refuse_member_session, resolve_caller

__all__ = ["MEMBER_COMMANDS", "guard_commands", "open_as_caller"]

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
    # A member reads its own experience; another member's sessions are unknown to it.
    ("session", "list"),
    ("session", "show"),
})


def _guarded(callback: Callable[..., Any], path: tuple[str, ...]) -> Callable[..., Any]:
    what = f"`resident {' '.join(path)}`"

    @functools.wraps(callback)
    def guard(*args: Any, **kwargs: Any) -> Any:
        refuse_member_session(presented_token(os.environ), what)
        return callback(*args, **kwargs)

    guard.owner_only = what  # type: ignore[attr-defined]  # tells a guarded command apart (tests)
    return guard


def guard_commands(group: click.Group, path: tuple[str, ...] = ()) -> None:
    """Make every command under `group` not in `MEMBER_COMMANDS` refuse a member session."""
    for name, command in group.commands.items():
        here = (*path, name)
        if isinstance(command, click.Group):
            guard_commands(command, here)
        elif here not in MEMBER_COMMANDS and command.callback is not None:
            command.callback = _guarded(command.callback, here)


@contextmanager
def open_as_caller(state: CliState, *, create: bool = True) -> Iterator[tuple[Runtime, Caller]]:
    """The runtime, and who is calling (the owner, or the member whose grant token is presented).

    `create=False` is for commands that only read: they need an existing home and never make one.
    """
    token = presented_token(os.environ)
    with open_runtime(state, create=create) as runtime:
        yield runtime, resolve_caller(runtime, token)
