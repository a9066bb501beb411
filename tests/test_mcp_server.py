"""The read-only MCP tool `knowledge_context`, tested with the official SDK's client.

In-process through `mcp.Client`, and once over stdio against a real `resident mcp serve` process.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from resident import Runtime
from resident.api.inprocess import InProcess
from resident.api.mcp import CONTEXT_TOOL, knowledge_server
from resident.coordination.tokens import GRANT_TOKEN_ENV, new_token
from resident.errors import GrantInvalid
from resident.runtime.coordination import Session, dispatch_session
from resident.runtime.runtime import host_context
from tests.execution_helpers import HeldHarness
from tests.knowledge_helpers import candidate, evidence_chain, open_knowledge, owner_grant, work_item


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with open_knowledge(tmp_path / "home") as runtime:
        for name, members in {"alpha": ["deven", "alice", "oliver"], "beta": ["alice", "oliver", "victor"]}.items():
            tree = tmp_path / name
            tree.mkdir()
            (tree / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
            runtime.knowledge.register_repository(name, tree, members=members)
        evidence_chain(runtime, work=work_item("alpha"), proposal=candidate("alpha shared"))
        evidence_chain(runtime, work=work_item("alpha"), proposal=candidate("deven's own", visibility="private"))
        evidence_chain(runtime, member="oliver", auditor="victor", work=work_item("beta"),
                       proposal=candidate("beta shared"))
        yield runtime


def session(rt: Runtime, member: str, repository: str = "alpha") -> Session:
    return dispatch_session(host_context(rt), "work", member, role="implement", parent_grant=owner_grant(rt),
                                   work=work_item(repository))


def call(rt: Runtime, token: str, arguments: dict[str, Any], tool: str = CONTEXT_TOOL) -> Any:
    server = knowledge_server(InProcess(rt, token))

    async def run() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    return asyncio.run(run())


def tools(runtime: Runtime, token: str) -> list[Any]:
    server = knowledge_server(InProcess(runtime, token))

    async def run() -> list[Any]:
        async with Client(server) as client:
            return list((await client.list_tools()).tools)

    return asyncio.run(run())


def titles(result: Any) -> list[str]:
    assert result.is_error is False, result.content
    payload = json.loads(result.content[0].text)
    assert payload == result.structured_content
    return sorted(entry["title"] for entry in payload["entries"])


def test_the_one_tool_is_advertised_read_only_and_requires_project_and_repository(rt: Runtime) -> None:
    [tool] = tools(rt, session(rt, "alice").token)
    assert tool.name == CONTEXT_TOOL
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.destructive_hint is False
    assert set(tool.input_schema["required"]) == {"project_id", "repository_id"}
    assert tool.input_schema["additionalProperties"] is False


def test_the_tool_is_not_advertised_while_knowledge_is_off(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home", realm="none") as runtime:
        token = session(runtime, "alice").token
        assert tools(runtime, token) == []
        result = call(runtime, token, {"project_id": "alpha", "repository_id": "alpha"})
    assert result.is_error is True


def test_the_subject_is_the_sessions_member(rt: Runtime) -> None:
    arguments = {"project_id": "alpha", "repository_id": "alpha"}
    assert titles(call(rt, session(rt, "alice").token, arguments)) == ["alpha shared"]
    assert titles(call(rt, session(rt, "deven").token, arguments)) == ["alpha shared", "deven's own"]


def test_no_argument_can_name_another_subject(rt: Runtime) -> None:
    token = session(rt, "alice").token
    for smuggled in ({"member": "deven"}, {"subject": "deven"}, {"owner": True}, {"grant": "x"}):
        result = call(rt, token, {"project_id": "alpha", "repository_id": "alpha", **smuggled})
        assert result.is_error is True
        assert "unknown field" in result.content[0].text
    for missing in ({"project_id": "alpha"}, {"repository_id": "alpha"}, {}):
        assert call(rt, token, missing).is_error is True


def test_a_session_gets_context_only_for_the_repository_of_its_work(rt: Runtime) -> None:
    token = session(rt, "alice", "alpha").token
    result = call(rt, token, {"project_id": "beta", "repository_id": "beta"})
    assert result.is_error is True
    assert "NotVisible" in result.content[0].text
    assert titles(call(rt, session(rt, "alice", "beta").token, {"project_id": "beta", "repository_id": "beta"})) == [
        "beta shared"
    ]


def test_an_ended_session_gets_nothing_more(rt: Runtime) -> None:
    alice = session(rt, "alice")
    server = knowledge_server(InProcess(rt, alice.token))
    arguments = {"project_id": "alpha", "repository_id": "alpha"}

    async def run() -> tuple[Any, Any]:
        async with Client(server) as client:
            before = await client.call_tool(CONTEXT_TOOL, arguments)
            await asyncio.to_thread(alice.finish, "succeeded")
            return before, await client.call_tool(CONTEXT_TOOL, arguments)

    before, result = asyncio.run(run())
    assert titles(before) == ["alpha shared"]
    assert result.is_error is True
    assert "GrantInvalid" in result.content[0].text
    with pytest.raises(GrantInvalid):
        knowledge_server(InProcess(rt, new_token()))


def test_there_is_no_other_tool_to_call(rt: Runtime) -> None:
    token = session(rt, "alice").token
    assert [tool.name for tool in tools(rt, token)] == [CONTEXT_TOOL]
    result = call(rt, token, {"entry_id": "x"}, tool="knowledge_promote")
    assert result.is_error is True


@pytest.mark.slow
def test_resident_mcp_serve_answers_a_real_client_over_stdio(rt: Runtime, tmp_path: Path) -> None:
    token = session(rt, "alice").token
    home = rt.home
    rt.close()  # the server process opens the home itself
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "resident.cli", "--home", str(home), "mcp", "serve"],
        env={**os.environ, GRANT_TOKEN_ENV: token},
    )

    async def run() -> tuple[list[str], Any]:
        async with Client(server) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            return listed, await client.call_tool(CONTEXT_TOOL, {"project_id": "alpha", "repository_id": "alpha"})

    listed, result = asyncio.run(run())
    assert listed == [CONTEXT_TOOL]
    assert titles(result) == ["alpha shared"]


def test_a_session_dispatched_without_work_is_authorized_for_nothing(rt: Runtime) -> None:
    bare = dispatch_session(host_context(rt), "chat", "alice", role="implement", parent_grant=owner_grant(rt))
    result = call(rt, bare.token, {"project_id": "alpha", "repository_id": "alpha"})
    assert result.is_error is True
    assert "NotVisible" in result.content[0].text


def test_a_session_started_on_a_task_in_a_registered_repository_gets_its_context(rt: Runtime, tmp_path: Path) -> None:
    # `session start --task TEXT` (no execution id): the execution gets the work item of the repository it runs in.
    launch = rt.sessions.start(
        "alice", harness="command", command=(sys.executable, "-c", "pass"), directory=str(tmp_path / "alpha"),
        task="fix the writer",
    )
    try:
        work = rt.coordinator.execution(launch.execution).work
        assert work is not None
        assert (work.project, work.repository, work.item, work.scope) == ("alpha", "alpha", "fix the writer", ".")
        assert titles(call(rt, launch.token, {"project_id": "alpha", "repository_id": "alpha"})) == ["alpha shared"]
        other = call(rt, launch.token, {"project_id": "beta", "repository_id": "beta"})
        assert other.is_error is True
        assert "NotVisible" in other.content[0].text
    finally:
        rt.sessions.end(launch.session, 0, token=launch.token)


def test_a_dispatched_execution_works_on_the_repository_of_its_directory(rt: Runtime, tmp_path: Path) -> None:
    (tmp_path / "beta" / "pkg").mkdir()
    held = HeldHarness(tmp_path / "fifos", "beta")
    execution = rt.coordinator.dispatch("oliver", "tidy the package", harness="command", command=held.command,
                                        directory=str(tmp_path / "beta" / "pkg"))
    assert execution.work is not None
    assert (execution.work.project, execution.work.repository, execution.work.scope) == ("beta", "beta", "pkg")
    held.started()
    held.go(0)
    assert rt.coordinator.wait(execution.id, timeout=60).state == "succeeded"
