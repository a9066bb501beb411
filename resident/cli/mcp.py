"""`resident mcp serve`: the read-only MCP server of a member session, over stdio.

The session is the one a grant token stands for: `--grant TOKEN`, else `$RESIDENT_GRANT_TOKEN`
(what the runtime hands a member's harness). Its tools call the runtime up for the home over the
API, presenting that token, or one opened here when none is up. Standard output carries the
protocol and nothing else; log lines go to standard error.
"""

from __future__ import annotations

import os

import anyio
import click
from mcp.server.stdio import stdio_server

from resident.api.mcp import knowledge_server
from resident.cli.common import UTF8, CliState, pass_state
from resident.cli.target import runtime_for
from resident.coordination.tokens import GRANT_TOKEN_ENV, check_token
from resident.errors import GrantInvalid

__all__ = ["COMMANDS"]


@click.group(short_help="The read-only MCP server of a member session.")
def mcp() -> None:
    """The Model Context Protocol server a member's harness can use (read-only)."""


@mcp.command()
@click.option("--grant", "token", type=UTF8, default=None, metavar="TOKEN",
              help=f"The session's grant token (default: ${GRANT_TOKEN_ENV}).")
@pass_state
def serve(state: CliState, token: str | None) -> None:
    """Serve MCP on stdin/stdout for the session TOKEN stands for.

    Advertises `knowledge_context` (verified knowledge for a project and repository, each entry
    revalidated) when `[knowledge] enabled = true`; the subject is the session's member, never a
    tool argument. Ends when the client closes stdin.
    """
    given = token if token is not None else os.environ.get(GRANT_TOKEN_ENV)
    if not given:
        raise GrantInvalid(f"no grant token: pass --grant TOKEN or set ${GRANT_TOKEN_ENV} (the session's token)")
    check_token(given)
    with runtime_for(state, grant_token=given) as runtime:
        server = knowledge_server(runtime)

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)


COMMANDS = (mcp,)
