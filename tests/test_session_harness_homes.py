"""A session's grant reaches a harness's tools even where they drop variables named like secrets (Codex drops
`*TOKEN*`): the token is also in a private file named by `$RESIDENT_GRANT_FILE`, and a Codex home gets the
runtime's MCP server and an inheriting shell environment policy, all put back when the session ends."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from resident import Runtime
from resident.runtime.sessions.start import resident_command
from resident.sessions.projection import command_line
from tests.cli_helpers import run_process

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


def test_a_codex_tool_without_the_token_variable_calls_back_through_the_grant_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
    repo = tmp_path / "repo"
    repo.mkdir()
    resident = command_line(resident_command())
    # What Codex's tools see: no $RESIDENT_GRANT_TOKEN. The tool copies the config it ran under, then calls back.
    script = (
        'unset RESIDENT_GRANT_TOKEN; cp "$CODEX_HOME/config.toml" seen-config.toml; '
        f'{resident} remember deven "written through the grant file"'
    )
    started = run_process(
        home, "session", "start", "deven", "--harness", "codex", "--dir", str(repo), "--task", "one note",
        "--", "sh", "-c", script,
    )
    assert started.code == 0, started.describe()
    seen = tomllib.loads((repo / "seen-config.toml").read_text())
    server = seen["mcp_servers"]["resident"]
    assert server["args"][-2:] == ["mcp", "serve"]
    assert set(server["env"]) == {"RESIDENT_GRANT_FILE", "RESIDENT_HOME"}
    assert seen["shell_environment_policy"]["inherit"] == "all"
    with Runtime.open(home, realm="none") as rt:
        [hit] = rt.member("deven").recall("written through the grant file", 1)
        record = rt.member("deven").get(hit.id)
    assert record.source.startswith("execution:")
    # Put back: the Codex home has no config the session wrote, and no token file is left anywhere in the home.
    assert not list(home.rglob("config.toml"))
    assert not list(home.rglob(".resident-grant-*"))
