"""`resident mcp serve`: the read-only MCP server of a member session, over stdio.

The session is the one a grant token stands for: `--grant TOKEN`, else `$RESIDENT_GRANT_TOKEN`
(what the runtime hands a member's harness), else the file `$RESIDENT_GRANT_FILE` names (what reaches
a server started by a harness that passes its MCP servers only the variables its configuration names,
as Codex does). Its tools call the runtime up for the home over the
API, presenting that token, or one opened here when none is up. Standard output carries the
protocol and nothing else; log lines go to standard error.

`resident mcp call TOOL ARGUMENTS` is the same tool from a shell, for a harness that speaks no MCP (pi):
one call with the session's grant (found as `serve` finds it), the tool's JSON arguments in, and its
JSON answer out (`{"entries": [...]}`), or the typed error.
"""

from __future__ import annotations

import os

import anyio
import click
import msgspec
from mcp.server.stdio import stdio_server

from resident.api.mcp import CONTEXT_TOOL, ContextArguments, knowledge_server
from resident.cli.common import UTF8, CliState, emit_json, pass_state
from resident.cli.target import runtime_for
from resident.coordination.tokens import GRANT_FILE_ENV, GRANT_TOKEN_ENV, check_token
from resident.errors import GrantInvalid, InvalidInput
from resident.operations.knowledge import SESSION_CONTEXT
from resident.runtime.caller import presented_token

__all__ = ["COMMANDS"]


@click.group(short_help="The read-only MCP server of a member session.")
def mcp() -> None:
    """The Model Context Protocol server a member's harness can use (read-only)."""


@mcp.command()
@click.option("--grant", "token", type=UTF8, default=None, metavar="TOKEN",
              help=f"The session's grant token (default: ${GRANT_TOKEN_ENV}, else the file ${GRANT_FILE_ENV} names).")
@pass_state
def serve(state: CliState, token: str | None) -> None:
    """Serve MCP on stdin/stdout for the session TOKEN stands for.

    Advertises `knowledge_context` (verified knowledge for a project and repository, each entry
    revalidated) when `[knowledge] enabled = true`; the subject is the session's member, never a
    tool argument. Ends when the client closes stdin.
    """
    given = token if token is not None else presented_token(os.environ)
    if not given:
        raise GrantInvalid(
            f"no grant token: pass --grant TOKEN, or set ${GRANT_TOKEN_ENV} (the session's token) or ${GRANT_FILE_ENV}"
            " (a file holding it)"
        )
    check_token(given)
    with runtime_for(state, grant_token=given) as runtime:
        server = knowledge_server(runtime)

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)


@mcp.command()
@click.argument("tool", type=UTF8)
@click.argument("arguments", type=UTF8, default="{}")
@pass_state
def call(state: CliState, tool: str, arguments: str) -> None:
    """Call the session's MCP TOOL once with ARGUMENTS (a JSON object), and print its JSON answer.

    What a harness without an MCP client (pi) uses: the same tool, the same arguments and answer
    (`knowledge_context '{"project_id": "P", "repository_id": "R", "query": "Q"}'`).
    """
    if tool != CONTEXT_TOOL:
        raise InvalidInput(f"there is no tool {tool!r} here; the session's tools: {CONTEXT_TOOL}")
    try:
        request = msgspec.json.decode(arguments.encode("utf-8", "surrogateescape"), type=ContextArguments, strict=True)
    except msgspec.DecodeError as error:
        raise InvalidInput(
            f"{error}; {CONTEXT_TOOL} takes a JSON object of project_id, repository_id, query and k"
        ) from None
    with runtime_for(state) as runtime:
        found = runtime.run(SESSION_CONTEXT, request)
    emit_json({"entries": found.entries})


COMMANDS = (mcp,)
