"""`resident mcp call`: the session's MCP tool from a shell (a harness without MCP, pi), and the grant file.

The call presents the session's grant as `mcp serve` does: `$RESIDENT_GRANT_TOKEN`, else the file
`$RESIDENT_GRANT_FILE` names (what survives a harness whose tools drop `*TOKEN*` variables). It answers
what the MCP tool answers, for the session's own member and work; anything else is a typed error.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from resident.api.mcp import CONTEXT_TOOL
from resident.coordination.tokens import GRANT_FILE_ENV, GRANT_TOKEN_ENV
from resident.messages.sessions import Harness
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.sessions.projection import WorkPackage, agents_text
from tests.cli_helpers import expect_error, expect_json, invoke
from tests.knowledge_helpers import candidate, evidence_chain, open_knowledge, owner_grant, work_item

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def granted(tmp_path: Path) -> tuple[Path, Path]:
    """A closed home with one verified entry for `alpha`, and deven's session's grant token in a file."""
    with open_knowledge(tmp_path / "home") as runtime:
        tree = tmp_path / "alpha"
        tree.mkdir()
        (tree / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
        runtime.knowledge.register_repository("alpha", tree, members=["deven"])
        evidence_chain(runtime, work=work_item("alpha"), proposal=candidate("alpha shared"))
        session = dispatch_session(host_context(runtime), "work", "deven", role="implement",
                                   parent_grant=owner_grant(runtime), work=work_item("alpha"))
        home = runtime.home
    grant_file = tmp_path / "grant"
    grant_file.write_text(session.token, encoding="ascii")
    return home, grant_file


def _as_session(grant_file: Path) -> dict[str, str | None]:
    return {GRANT_TOKEN_ENV: None, GRANT_FILE_ENV: str(grant_file)}


def test_mcp_call_answers_what_the_tool_answers_with_the_grant_from_its_file(granted: tuple[Path, Path]) -> None:
    home, grant_file = granted
    arguments = json.dumps({"project_id": "alpha", "repository_id": "alpha"})
    answer = expect_json(invoke(home, "mcp", "call", CONTEXT_TOOL, arguments, env=_as_session(grant_file)))
    assert [entry["title"] for entry in answer["entries"]] == ["alpha shared"]


def test_mcp_call_refuses_another_tool_bad_arguments_and_no_grant(granted: tuple[Path, Path]) -> None:
    home, grant_file = granted
    env = _as_session(grant_file)
    expect_error(invoke(home, "mcp", "call", "remember", "{}", env=env), "InvalidInput", naming=(CONTEXT_TOOL,))
    expect_error(invoke(home, "mcp", "call", CONTEXT_TOOL, '{"member": "alice"}', env=env), "InvalidInput")
    expect_error(invoke(home, "mcp", "call", CONTEXT_TOOL, "not json", env=env), "InvalidInput")
    # The owner has no session: the tool is a member session's.
    owner: dict[str, str | None] = {GRANT_TOKEN_ENV: None, GRANT_FILE_ENV: None}
    arguments = json.dumps({"project_id": "alpha", "repository_id": "alpha"})
    assert invoke(home, "mcp", "call", CONTEXT_TOOL, arguments, env=owner).code != 0


def test_mcp_serve_finds_the_grant_in_its_file(granted: tuple[Path, Path]) -> None:
    home, grant_file = granted
    environment = {k: v for k, v in os.environ.items() if k != GRANT_TOKEN_ENV}
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "resident.cli", "--home", str(home), "mcp", "serve"],
        env={**environment, GRANT_FILE_ENV: str(grant_file)},
    )

    async def run() -> Any:
        async with Client(server) as client:
            return await client.call_tool(CONTEXT_TOOL, {"project_id": "alpha", "repository_id": "alpha"})

    result = asyncio.run(run())
    assert not result.is_error, result
    assert "alpha shared" in result.content[0].text


@pytest.mark.parametrize("harness", ["claude-code", "codex", "pi", "command"])
def test_the_projection_tells_each_member_how_it_reaches_the_tool(harness: Harness) -> None:
    package = WorkPackage(member="deven", role="implement", harness=harness, session="ses_x", execution="exec_x",
                          task="fix it", resident=("/opt/resident/bin/resident",))
    callbacks = agents_text(package).split("## Calling back", 1)[1]
    assert "`/opt/resident/bin/resident mcp call knowledge_context '{" in callbacks
    assert ("MCP tool `knowledge_context`" in callbacks) == (harness in {"claude-code", "codex"})
    assert "$RESIDENT_GRANT_FILE" in callbacks
