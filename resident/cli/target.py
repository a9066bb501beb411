"""Where a command's operations run: the runtime `resident up` serves for the home, or one opened here.

This is the one place that decides. Every command that reads or changes a home asks `runtime_for`,
and gets something with `run(operation, request, member)` over the declared operations
(`resident.operations`):

* a runtime is up for the home (its `api.json` names a live process holding the home's lock): the
  command talks to it over loopback, one request per operation (`resident.api.oneshot`), presenting
  the home's token and, in a member session, the session's grant token;
* otherwise the runtime is opened in this process, as it always was, and the operations run through
  the very executor the server runs (`resident.api.inprocess`).

Either way the answers are the same structs, so the printing code is shared and a command prints
the same bytes and exits with the same status. The remote path imports neither the runtime nor the
server stack, which is what makes it quick (bench/cli.py). Commands that need the home closed
(`restore`, `salvage`, `doctor`, `init` that rewrites the configuration, ...) call `require_closed`,
which refuses with `RuntimeIsUp` while a runtime is up.

A new command group calls its operations through `runtime_for`: once declared, an operation works
both ways.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from resident.api.challenge import PROOF_KEY_ENV
from resident.api.discovery import API_ADDRESS_ENV, SESSION_ENV, check_version, running, session_discovery
from resident.cli.common import CliState
from resident.coordination.tokens import check_token
from resident.errors import RuntimeIsUp
from resident.operations.declaration import Operation
from resident.runtime.caller import presented_token
from resident.store.home import resolve_home

__all__ = ["Target", "require_closed", "runtime_for"]


class Target(Protocol):
    """A home's runtime as a command uses it: one call per declared operation."""

    def run(self, op: Operation[Any, Any, Any], request: Any, member: str | None = None) -> Any:
        """Run a declared operation's `request` (on `member`'s surface); its reply struct, or its typed error."""


@contextmanager
def runtime_for(state: CliState, *, create: bool = True, grant_token: str | None = None) -> Iterator[Target]:
    """The runtime of the selected home: the one up for it, else one opened here and closed at the end.

    `create=False` is for commands that only read: in-process, they never create a home.
    `grant_token` is presented instead of `$RESIDENT_GRANT_TOKEN` (`mcp serve --grant`).
    """
    home = resolve_home(state.home)
    grant = presented_token(os.environ) if grant_token is None else grant_token
    address = os.environ.get(API_ADDRESS_ENV)
    # A member session is told the runtime's address: a sandboxed one cannot read api.json, and with
    # its grant token alone it can only act as its member.
    found = (
        session_discovery(
            address, home, session=os.environ.get(SESSION_ENV, ""), proof_key=os.environ.get(PROOF_KEY_ENV, "")
        )
        if grant is not None and address
        else running(home)
    )
    if found is not None:
        from resident.api.oneshot import OneShot  # noqa: PLC0415 - the remote path's own client

        # Only a token's shape goes into a header; the server decides what it stands for.
        yield OneShot(check_version(found), None if grant is None else check_token(grant))
        return
    # The in-process path: the runtime, and the executor that serves the API.
    from resident.api.inprocess import InProcess  # noqa: PLC0415 - loaded only when this runs
    from resident.runtime import Runtime  # noqa: PLC0415 - loaded only when this runs

    with Runtime.open(home, create=create) as runtime:
        yield InProcess(runtime, grant)


def require_closed(explicit: str | os.PathLike[str] | None) -> Path:
    """The home, which no runtime may be up for: `RuntimeIsUp`, naming `resident down`, while one is."""
    home = resolve_home(explicit)
    found = running(home)
    if found is not None:
        raise RuntimeIsUp(
            f"a runtime is up for {home} (pid {found.pid}, {found.address}) and this command needs the home "
            "closed; stop it with `resident down` first"
        )
    return home
