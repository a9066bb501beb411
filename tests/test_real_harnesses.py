"""The real Claude Code, pi and Codex under `resident session start`, offline, against a scripted loopback model.

Each harness is the published npm package (`.ci/run` installs them outside the repository; see
`HARNESSES`), pointed at `tests/scripted_model.py` standing in for the model: Anthropic Messages for
Claude Code and pi, the OpenAI Responses API for Codex, streamed as each asks. The script makes the
harness run a shell tool that calls the runtime back as the member (`resident remember` with the
session's grant), then finish with text. Checked: the harness ran in the member's projection and
exited 0, the callback's write arrived as the member's, the transcript was recovered with the
conversation in it, the directory was restored, and a secret planted in the task is in neither the
store nor the session shown. The callback is the exact command the projection told the member (this
`resident` by its absolute path), with nothing else passed: the address and the grant reach the shell on
their own, through Codex's secret filter too.

The runtime's MCP tool `knowledge_context`: Claude Code through the projected `.mcp.json`, Codex through
the entry in its config.toml (under `start` and `dispatch`), its answer reaching the model in the next
request. pi speaks no MCP: its member reaches the same tool through `resident mcp call` from its shell.
Without node or the installed packages the tests skip, saying why.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from resident import Runtime
from resident.runtime.sessions.start import resident_command
from resident.sessions.projection import command_line
from tests.api_helpers import UpProcess
from tests.cli_helpers import Outcome, expect_json, expect_ok, invoke, run_process
from tests.scripted_model import Script, ScriptedModel, Shell, Text, Tool
from tests.session_helpers import files_holding, requires_sandbox, tree

# Where `.ci/run` installs the harnesses with npm: outside the repository, and outside the user's home,
# which a sandboxed session hides from the harness.
HARNESSES = Path(os.environ.get("RESIDENT_TEST_HARNESSES") or "/var/tmp/resident-test-harnesses")
BINARIES = {"claude-code": "claude", "pi": "pi", "codex": "codex"}
PACKAGES = {"claude-code": "@anthropic-ai/claude-code", "pi": "@mariozechner/pi-coding-agent", "codex": "@openai/codex"}

pytestmark = [requires_sandbox, pytest.mark.slow, pytest.mark.timeout(300)]

NOTE = "the retry test needs a fake clock, not wall time"
ANSWER = "Fixed the retry test: it runs on a manual clock now."
# Shaped like an AWS access key id, so the redaction table knows it; planted in the task.
PLANTED = "AKIA" + "Q7RSTUVWXYZ23456"


def _binary(harness: str) -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the real harnesses are node programs (.ci/run installs them with npm)")
    binary = HARNESSES / "node_modules" / ".bin" / BINARIES[harness]
    if not binary.exists():
        pytest.skip(f"{PACKAGES[harness]} is not installed in {HARNESSES} (.ci/run installs it with npm)")
    return binary


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as runtime:
        runtime.memory.enable()
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "AGENTS.md").write_text("# Payments\n\nRun `make test` before committing.\n")
    return root


def _callback() -> str:
    """The member's call back into the runtime, by the exact command the projection tells it (this `resident`).

    Nothing else is passed: the runtime's address and the grant must reach the harness's shell on their own
    (Codex's shell drops `*TOKEN*` variables; the grant file's name survives it)."""
    return f"{command_line(resident_command())} remember deven {shlex.quote(NOTE)} --json"


def _told_the_command(requests: list[dict[str, Any]]) -> bool:
    """Whether the model was shown the exact callback command (the projected AGENTS.md, as the harness sends it)."""
    return command_line(resident_command()) in json.dumps(requests)


def _claude_code(binary: Path, model: ScriptedModel, _home: Path, _scratch: Path) -> tuple[list[str], dict[str, str]]:
    argv = [str(binary), "-p", "Fix the payments retry test.", "--allowedTools", "Bash"]
    return argv, {
        "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "scripted-model-key",
        "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
    }


def _pi(binary: Path, model: ScriptedModel, _home: Path, scratch: Path) -> tuple[list[str], dict[str, str]]:
    # pi reads its providers from `$PI_CODING_AGENT_DIR/models.json`; the runtime moves only its sessions.
    agent = scratch / "pi-agent"
    agent.mkdir()
    provider = {"baseUrl": model.url, "api": "anthropic-messages", "apiKey": "scripted-model-key",
                "models": [{"id": "scripted-model"}]}
    (agent / "models.json").write_text(json.dumps({"providers": {"scripted": provider}}))
    argv = [str(binary), "--provider", "scripted", "--model", "scripted-model", "-p", "Fix the payments retry test."]
    return argv, {"PI_CODING_AGENT_DIR": str(agent)}


def _codex(binary: Path, model: ScriptedModel, home: Path, _scratch: Path) -> tuple[list[str], dict[str, str]]:
    # Codex reads its model provider from `$CODEX_HOME/config.toml`, and the runtime sets CODEX_HOME to the
    # member's own Codex home under the resident home.
    codex_home = home / "harness" / "deven" / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "scripted-model"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
        f'name = "scripted"\nbase_url = "{model.url}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_MODEL_KEY"\n'
        # Codex's secret filter on, as a user may have it: the shell loses `*TOKEN*` (`$RESIDENT_GRANT_TOKEN`),
        # and the callback must still reach the runtime (through `$RESIDENT_GRANT_FILE`).
        "\n[shell_environment_policy]\nignore_default_excludes = false\n"
    )
    # Codex's own sandbox needs kernel features a container may lack; the session's bubblewrap is the sandbox.
    argv = [str(binary), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
            "Fix the payments retry test."]
    return argv, {"SCRIPTED_MODEL_KEY": "scripted-model-key"}


LAUNCHES = {"claude-code": _claude_code, "pi": _pi, "codex": _codex}


def _start(harness: str, home: Path, repo: Path, scratch: Path, model: ScriptedModel) -> Outcome:
    argv, variables = LAUNCHES[harness](_binary(harness), model, home, scratch)
    return run_process(
        home, "session", "start", "deven", "--harness", harness, "--dir", str(repo),
        "--task", f"fix the payments retry test (the staging key {PLANTED} is in the vault)", "--json", "--", *argv,
        env=variables,
    )


@pytest.mark.parametrize("harness", ["claude-code", "pi", "codex"])
def test_a_real_harness_runs_the_member_calls_back_and_its_transcript_is_recovered(
    harness: str, home: Path, repo: Path, tmp_path: Path
) -> None:
    _binary(harness)
    before = tree(repo)
    with ScriptedModel(Script([Shell(_callback()), Text(ANSWER)])) as model:
        outcome = _start(harness, home, repo, tmp_path, model)
        main_requests = [body for _path, body in model.requests if body.get("tools")]
    assert outcome.code == 0, outcome.describe()
    session = json.loads(outcome.stdout)
    assert (session["state"], session["outcome"]) == ("recovered", "succeeded"), session
    # The harness asked the model twice in the conversation: before and after running the callback.
    assert len(main_requests) >= 2
    # The member was told the exact command it called back with.
    assert _told_the_command(main_requests), "the projected callback command never reached the model"
    assert tree(repo) == before, "the projection was not restored exactly"

    # The callback's write arrived, as deven's.
    with Runtime.open(home, realm="none") as runtime:
        hits = runtime.member("deven").recall("retry test fake clock wall time", k=10)
        notes = [runtime.member("deven").get(hit.id) for hit in hits if hit.body == NOTE]
    assert len(notes) == 1, hits
    assert (notes[0].owner, notes[0].author or notes[0].owner) == ("deven", "deven")

    # The conversation is in the recovered session: the tool call and the model's last words.
    shown = expect_json(invoke(home, "session", "show", session["id"], "--json"))
    text = json.dumps(shown)
    assert ANSWER in text
    assert "remember deven" in text
    # The planted key reached the harness (in the projected task) but not the store or what is shown.
    assert PLANTED not in text
    assert files_holding(home / "store.1", [PLANTED]) == []


@pytest.mark.parametrize("harness", ["claude-code", "pi", "codex"])
def test_a_real_harness_dispatched_runs_in_the_background_and_await_reports_its_write(
    harness: str, home: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _binary(harness)
    before = tree(repo)
    with ScriptedModel(Script([Shell(_callback()), Text(ANSWER)])) as model:
        argv, variables = LAUNCHES[harness](_binary(harness), model, home, tmp_path)
        # The runtime runs a dispatched harness itself: the model's address is in `resident up`'s environment.
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        with UpProcess(home):
            dispatched = run_process(
                home, "dispatch", "deven", "--harness", harness, "--dir", str(repo),
                "--task", f"fix the payments retry test (the staging key {PLANTED} is in the vault)", "--", *argv,
            )
            assert dispatched.code == 0, dispatched.describe()
            execution = dispatched.stdout.strip()
            awaited = run_process(home, "await", execution, "--timeout", "240", "--json")
    assert awaited.code == 0, awaited.describe()
    report = json.loads(awaited.stdout)
    assert (report["state"], report["exit_code"]) == ("succeeded", 0), report
    assert [record["summary"] for record in report["records"]] == [NOTE]
    assert tree(repo) == before, "the projection was not restored exactly"
    shown = expect_json(invoke(home, "session", "show", report["session"]["id"], "--json"))
    roles = {turn["role"] for turn in shown["turns"]}
    assert "other" not in roles, [t["text"][:80] for t in shown["turns"] if t["role"] == "other"]
    assert not any("<environment_context>" in turn["text"] or "<INSTRUCTIONS>" in turn["text"]
                   for turn in shown["turns"]), "injected context became turns"
    assert ANSWER in json.dumps(shown)
    # The planted key is neither in the store nor in the harness's own copies (redacted in place), nor in what
    # leaves the home: the member's export (its sessions too) and a backup.
    assert files_holding(home / "store.1", [PLANTED]) == []
    assert files_holding(home / "harness", [PLANTED]) == []
    expect_ok(invoke(home, "member", "export", "deven", str(tmp_path / "deven.export")))
    expect_ok(invoke(home, "backup", str(tmp_path / "backup")))
    assert files_holding(tmp_path / "backup", [PLANTED]) == []
    exported = (tmp_path / "deven.export").read_bytes()
    assert NOTE.encode() in exported, "the export holds the member's write"
    assert PLANTED.encode() not in exported


def test_claude_code_calls_the_runtimes_mcp_tool_for_the_repository_it_works_in(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    binary = _binary("claude-code")
    ask = _knowledge_home(home, repo)
    script = Script([Shell(_callback()), Tool("knowledge_context", ask), Text(ANSWER)])
    with ScriptedModel(script) as model:
        argv, variables = _claude_code(binary, model, home, tmp_path)
        # The projected .mcp.json names the runtime's server; Claude Code loads it when told to.
        argv += ["--mcp-config", ".mcp.json", "--allowedTools", "Bash", "mcp__resident__knowledge_context"]
        # Claude Code 2.1 defers MCP tools behind its ToolSearch tool; offered directly, the model can call it.
        variables["ENABLE_TOOL_SEARCH"] = "false"
        outcome = run_process(
            home, "session", "start", "deven", "--harness", "claude-code", "--dir", str(repo),
            "--task", "fix the payments retry test", "--json", "--", *argv, env=variables,
        )
    assert outcome.code == 0, outcome.describe()
    session = json.loads(outcome.stdout)
    shown = expect_json(invoke(home, "session", "show", session["id"], "--json"))
    calls = [turn for turn in shown["turns"] if turn["tool"].endswith("knowledge_context")]
    assert calls, [(t["role"], t["kind"], t["tool"], t["text"][:300]) for t in shown["turns"]]
    [result] = [turn for turn in shown["turns"] if turn["kind"] == "tool_result" and turn["call"] == calls[0]["call"]]
    assert not result["text"].startswith("[error]"), result["text"]
    assert "entries" in result["text"]


def _knowledge_home(home: Path, repo: Path) -> dict[str, str]:
    """Knowledge on, the repository registered for deven; what `knowledge_context` is asked."""
    config = home / "resident.toml"
    config.write_text(config.read_text() + "\n[knowledge]\nenabled = true\n")
    with Runtime.open(home, realm="none") as runtime:
        runtime.knowledge.register_repository("payments", repo, members=["deven"])
    return {"project_id": "payments", "repository_id": "payments", "query": "retry test"}


@pytest.mark.parametrize("how", ["start", "dispatch"])
def test_codex_calls_the_runtimes_mcp_tool_through_its_projected_config(
    how: str, home: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = _binary("codex")
    ask = _knowledge_home(home, repo)
    with ScriptedModel(Script([Tool("knowledge_context", ask), Text(ANSWER)])) as model:
        argv, variables = _codex(binary, model, home, tmp_path)
        own = (home / "harness" / "deven" / "codex" / "config.toml").read_bytes()
        if how == "start":
            outcome = run_process(
                home, "session", "start", "deven", "--harness", "codex", "--dir", str(repo),
                "--task", "fix the payments retry test", "--json", "--", *argv, env=variables,
            )
        else:
            # Under `resident up` the server reaches the runtime over the API ($RESIDENT_API and the proof key,
            # forwarded by the config entry), not by opening the home.
            for name, value in variables.items():
                monkeypatch.setenv(name, value)
            with UpProcess(home):
                dispatched = run_process(
                    home, "dispatch", "deven", "--harness", "codex", "--dir", str(repo),
                    "--task", "fix the payments retry test", "--", *argv,
                )
                assert dispatched.code == 0, dispatched.describe()
                outcome = run_process(home, "await", dispatched.stdout.strip(), "--timeout", "240", "--json")
        main_requests = [body for _path, body in model.requests if body.get("tools")]
    assert outcome.code == 0, outcome.describe()
    # Codex offered the runtime's tool, in the MCP namespace its projected config.toml entry names.
    offered = [(tool["name"], [inner["name"] for inner in tool.get("tools") or []])
               for tool in main_requests[0]["tools"] if tool.get("type") == "namespace"]
    assert ("mcp__resident", ["knowledge_context"]) in offered, offered
    # The tool's answer reached the model in the next request: the server found its grant and the runtime.
    outputs = [item["output"] for body in main_requests for item in body.get("input") or []
               if item.get("type") == "function_call_output"]
    assert len(outputs) == 1, outputs
    assert '"entries"' in outputs[0], outputs
    assert "GrantInvalid" not in json.dumps(outputs), outputs
    assert "NotVisible" not in json.dumps(outputs), outputs
    # The member's own Codex config is back byte for byte.
    assert (home / "harness" / "deven" / "codex" / "config.toml").read_bytes() == own


def test_pi_speaks_no_mcp_and_reaches_the_same_tool_through_the_callback_command(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    binary = _binary("pi")
    ask = _knowledge_home(home, repo)
    # pi 0.73 has no MCP client (its README: "No MCP"): the same tool from its shell, with the grant.
    cli = f"{command_line(resident_command())} mcp call knowledge_context {shlex.quote(json.dumps(ask))}"
    with ScriptedModel(Script([Shell(cli), Text(ANSWER)])) as model:
        argv, variables = _pi(binary, model, home, tmp_path)
        outcome = run_process(
            home, "session", "start", "deven", "--harness", "pi", "--dir", str(repo),
            "--task", "fix the payments retry test", "--json", "--", *argv, env=variables,
        )
        main_requests = [body for _path, body in model.requests if body.get("tools")]
    assert outcome.code == 0, outcome.describe()
    assert not any(tool.get("name", "").startswith("mcp") for tool in main_requests[0]["tools"])
    assert _told_the_command(main_requests)
    results = [block for body in main_requests for message in body.get("messages") or []
               if isinstance(message.get("content"), list)
               for block in message["content"] if block.get("type") == "tool_result"]
    assert len(results) == 1, results
    text = json.dumps(results[0].get("content"))
    # The tool's JSON answer, not a refusal: the grant reached it as deven's, for the repository deven works in.
    assert "error" not in text.lower(), text
    assert '\\"entries\\"' in text, text
