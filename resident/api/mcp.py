"""The read-only MCP server a member session gets: one tool, `knowledge_context`, and nothing else.

The server is started for one grant token (`resident mcp serve --grant TOKEN`, or the token a
member session finds in `$RESIDENT_GRANT_TOKEN`), and calls the runtime through the API's
operations with that token presented: over loopback when `resident up` runs for the home, else
in-process (`resident.cli.target.runtime_for`). The subject of every call is the member that token
stands for, held to the repository of the work its execution was dispatched on (the
`session.context` operation decides it from the token, never from the request); nothing in a tool
call can name another subject (arguments other than the ones below are refused). The token is
checked again on every call, so a session whose execution ended or whose grant expired gets
nothing more.

`knowledge_context` takes `project_id` and `repository_id` (required), an optional `query` and
`k`, and returns exactly what context preparation returns: verified entries, each revalidated.
It is advertised only when `[knowledge] enabled = true`, annotated read-only, and the server has
no other tool: no write path, no way to hand in a receipt or a verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types as types
import msgspec
from mcp.server import Server

from resident.errors import ResidentError
from resident.messages.knowledge import MAX_CONTEXT_K
from resident.messages.knowledge_calls import ContextEntries, SessionContext, SessionQuery
from resident.operations.declaration import Operation
from resident.operations.knowledge import SESSION_CONTEXT, SESSION_GRANT

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

__all__ = ["CONTEXT_TOOL", "ContextArguments", "Operations", "knowledge_server"]

CONTEXT_TOOL = "knowledge_context"

_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project_id": {"type": "string", "description": "The project the context is for."},
        "repository_id": {"type": "string", "description": "The repository the context is for."},
        "query": {"type": "string", "description": "What the work is about; ranks the entries (optional)."},
        "k": {"type": "integer", "minimum": 1, "maximum": MAX_CONTEXT_K, "description": "At most this many entries."},
    },
    "required": ["project_id", "repository_id"],
    "additionalProperties": False,
}

_TOOL = types.Tool(
    name=CONTEXT_TOOL,
    title="Verified knowledge for this work",
    description=(
        "Verified knowledge entries about one project and repository that this session may read, each "
        "revalidated against the repository just before it is returned. Read-only."
    ),
    input_schema=_INPUT_SCHEMA,
    annotations=types.ToolAnnotations(
        title="Verified knowledge for this work", read_only_hint=True, destructive_hint=False,
        idempotent_hint=True, open_world_hint=False,
    ),
)


# The arguments `knowledge_context` accepts (anything else, a subject above all, is refused): the
# body of the `session.context` operation.
ContextArguments = SessionContext


class Operations(Protocol):
    """The runtime as the server calls it, with the session's grant token presented (`resident.cli.target`)."""

    def run(self, op: Operation[Any, Any, Any], request: Any, member: str | None = None) -> Any:
        """Run a declared operation's `request`: its reply struct, or its typed error."""


def knowledge_server(operations: Operations) -> Server[Any]:
    """The MCP server of the session whose token `operations` presents (checked now, and again at every call)."""
    operations.run(SESSION_GRANT, SessionQuery())

    def knowledge_on() -> bool:
        return bool(operations.run(SESSION_GRANT, SessionQuery()).knowledge)

    async def list_tools(
        _context: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            advertised = await anyio.to_thread.run_sync(knowledge_on)
        except ResidentError:  # the session ended, or its grant expired: nothing to offer
            advertised = False
        return types.ListToolsResult(tools=[_TOOL] if advertised else [])

    async def call_tool(
        _context: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            if params.name != CONTEXT_TOOL or not await anyio.to_thread.run_sync(knowledge_on):
                return _error(f"there is no tool {params.name!r} here")
            try:
                arguments = msgspec.convert(params.arguments or {}, ContextArguments, strict=True)
            except msgspec.ValidationError as error:
                return _error(f"InvalidInput: {error}; {CONTEXT_TOOL} takes project_id, repository_id, query and k")
            found: ContextEntries = await anyio.to_thread.run_sync(
                lambda: operations.run(SESSION_CONTEXT, arguments)
            )
        except ResidentError as error:
            return _error(f"{type(error).__name__}: {error.message}")
        return _result(found)

    return Server("resident", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def _result(found: ContextEntries) -> types.CallToolResult:
    payload = {"entries": msgspec.to_builtins(found.entries)}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=msgspec.json.encode(payload).decode("utf-8"))],
        structured_content=payload,
        is_error=False,
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
