"""A session's grant reaches a harness's tools even where they drop variables named like secrets (Codex drops
`*TOKEN*`): the token is also in a private file named by `$RESIDENT_GRANT_FILE`, and a Codex home gets the
runtime's MCP server and an inheriting shell environment policy, all put back when the session ends."""

from __future__ import annotations

import json
import sqlite3
import sys
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
    # Codex starts an MCP server with a bare environment: the entry forwards the session's variables by name.
    assert {"RESIDENT_GRANT_FILE", "RESIDENT_HOME", "RESIDENT_API", "RESIDENT_SESSION"} <= set(server["env_vars"])
    assert "env" not in server, "nothing particular to one session is written into the shared config"
    assert seen["shell_environment_policy"]["inherit"] == "all"
    with Runtime.open(home, realm="none") as rt:
        [hit] = rt.member("deven").recall("written through the grant file", 1)
        record = rt.member("deven").get(hit.id)
    assert record.source.startswith("execution:")
    # Put back: the Codex home has no config the session wrote, and no token file is left anywhere in the home.
    assert not list(home.rglob("config.toml"))
    assert not list(home.rglob(".resident-grant-*"))


_CODEX = """
import json, os, pathlib, sqlite3, sys
secret = sys.argv[1]
home = pathlib.Path(os.environ["CODEX_HOME"])
folder = home / "sessions" / "2026" / "03" / "03"
folder.mkdir(parents=True, exist_ok=True)
lines = [
    {"timestamp": "2026-03-03T14:20:00Z", "type": "session_meta",
     "payload": {"id": "019a2d7a-41c4-78b1-b7cc-a45d62a89c00", "cwd": os.getcwd()}},
    {"timestamp": "2026-03-03T14:20:01Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "my key is " + secret}]}},
]
rollout = folder / "rollout-2026-03-03T14-20-00-019a2d7a-41c4-78b1-b7cc-a45d62a89c00.jsonl"
rollout.write_text("\\n".join(json.dumps(line) for line in lines) + "\\n")
with sqlite3.connect(home / "thread_history_1.sqlite") as db:
    db.execute("CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, body TEXT)")
    db.execute("INSERT INTO items (body) VALUES (?)", ("the user said my key is " + secret,))
"""


def _codex_session(tmp_path: Path, mode: str) -> tuple[Path, Path, str]:
    """A codex-harness session that plants an AWS key in its rollout and thread history, under `mode`."""
    from tests.session_fixtures import planted_secrets  # noqa: PLC0415 - the fixtures' own secrets

    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
    config = home / "resident.toml"
    config.write_text(config.read_text() + f'\n[sessions]\nharness_transcripts = "{mode}"\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    secret = planted_secrets()["AWS_KEY"]
    with Runtime.open(home, realm="none") as rt:
        launch = rt.sessions.start("deven", harness="codex", command=(sys.executable, "-c", _CODEX, secret),
                                   directory=str(repo), task="one turn")
        session = rt.sessions.run(launch)
        assert session is not None
        assert session.turns == 1
        codex_home = Path(launch.variables["CODEX_HOME"])
    return home, codex_home, secret


@pytest.mark.parametrize("mode", ["redact", "keep", "remove"])
def test_the_harness_copies_of_a_transcript_are_redacted_kept_or_removed(tmp_path: Path, mode: str) -> None:
    home, codex_home, secret = _codex_session(tmp_path, mode)
    found = list((codex_home / "sessions").rglob("rollout-*.jsonl"))
    rollout = found[0] if found else None
    with sqlite3.connect(codex_home / "thread_history_1.sqlite") as db:
        [(body,)] = db.execute("SELECT body FROM items").fetchall()
    if mode == "keep":
        assert rollout is not None
        assert secret in rollout.read_text()
        assert secret in body
        return
    if mode == "remove":
        assert rollout is None
    else:
        assert rollout is not None
        text = rollout.read_text()
        assert secret not in text
        assert "[REDACTED:" in text
        assert json.loads(text.splitlines()[0])["type"] == "session_meta", "still a rollout Codex reads"
    # The thread history holds every session of the home: redacted in both modes, never deleted.
    assert secret not in body
    assert "[REDACTED:" in body
    # And the store never had it.
    assert not any(secret.encode() in path.read_bytes() for path in home.rglob("*") if path.is_file()
                   and "harness" not in path.parts)
