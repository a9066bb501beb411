"""Regenerate `tests/data/sessions/real/`: the transcripts the real harnesses write, redacted and kept small.

Run from the repository root, with the harnesses installed as `.ci/run` installs them (npm packages under
`$RESIDENT_TEST_HARNESSES`, default `/var/tmp/resident-test-harnesses`):

    python -m tests.make_session_fixtures

Each harness (Claude Code, pi, Codex) runs once, directly (not under `resident session start`: the fixture is
what the harness itself writes), in a scratch repository holding an `AGENTS.md`, with its configuration and
session directories in the scratch tree and `HOME` there too. `tests/scripted_model.py` stands in for the model:
the harness runs one shell command (`echo fixture-shell-ran`), then the model answers with text. The
transcript files the harness wrote are then redacted — the scratch directory becomes `/work/repo` or
`/work/scratch`, the host and user names become `host` and `user` — and written under
`tests/data/sessions/real/<harness>/` with a name that holds no path; strings longer than `MAX_STRING` and lists
longer than `MAX_ITEMS` are cut (listings and prompts of several KB). Harness versions are kept.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.scripted_model import Script, ScriptedModel, Shell, Text

HARNESSES = Path(os.environ.get("RESIDENT_TEST_HARNESSES") or "/var/tmp/resident-test-harnesses")
OUT = Path(__file__).parent / "data" / "sessions" / "real"
PROMPT = "Say what the shell prints."
SHELL = "echo fixture-shell-ran"
ANSWER = "The shell printed fixture-shell-ran."
AGENTS = "# Fixture repository\n\nRun `make test` before committing.\n"
KEY = "scripted-model-key"
# Longer strings (tool and skill listings, system prompts, request shapes: several KB each) are cut here, so
# the fixtures stay small; what the parsers decide on is the records' kinds and short fields.
MAX_STRING = 300
MAX_ITEMS = 8


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    base = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "TERM": "dumb"}
    done = subprocess.run(argv, cwd=cwd, env={**base, **env}, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=240, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")


def _claude(model: ScriptedModel, repo: Path, scratch: Path) -> list[Path]:
    config = scratch / "claude"
    _run([str(HARNESSES / "node_modules/.bin/claude"), "-p", PROMPT, "--allowedTools", "Bash"], repo, {
        "HOME": str(scratch), "CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": KEY, "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    })
    return sorted((config / "projects").rglob("*.jsonl"))


def _pi(model: ScriptedModel, repo: Path, scratch: Path) -> list[Path]:
    agent = scratch / "pi-agent"
    agent.mkdir()
    provider = {"baseUrl": model.url, "api": "anthropic-messages", "apiKey": KEY, "models": [{"id": "scripted-model"}]}
    (agent / "models.json").write_text(json.dumps({"providers": {"scripted": provider}}))
    argv = [str(HARNESSES / "node_modules/.bin/pi"), "--provider", "scripted", "--model", "scripted-model",
            "-p", PROMPT]
    _run(argv, repo, {"HOME": str(scratch), "PI_CODING_AGENT_DIR": str(agent)})
    return sorted((agent / "sessions").rglob("*.jsonl"))


def _codex(model: ScriptedModel, repo: Path, scratch: Path) -> list[Path]:
    home = scratch / "codex"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "scripted-model"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
        f'name = "scripted"\nbase_url = "{model.url}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_MODEL_KEY"\n'
    )
    argv = [str(HARNESSES / "node_modules/.bin/codex"), "exec", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", PROMPT]
    _run(argv, repo, {"HOME": str(scratch), "CODEX_HOME": str(home), "SCRIPTED_MODEL_KEY": KEY})
    return sorted((home / "sessions").rglob("rollout-*.jsonl"))


RUNS = {"claude-code": _claude, "pi": _pi, "codex": _codex}


def redact(text: str, repo: Path, scratch: Path, port: int) -> str:
    """`text` with what names this machine replaced: the scratch paths (also as Claude Code and pi munge them),
    the model server's port, the host and user names."""
    for path, placeholder in ((repo, "/work/repo"), (scratch, "/work/scratch")):
        for variant in (str(path), str(path.resolve())):
            text = text.replace(variant, placeholder)
            text = text.replace(variant.replace("/", "-"), placeholder.replace("/", "-"))
    text = text.replace(f"127.0.0.1:{port}", "127.0.0.1:8000")
    for name, placeholder in ((socket.gethostname(), "host"), (getpass.getuser(), "user")):
        # Whole words only: a short user name ("root") must not change the words that contain it.
        if len(name) >= 3:
            text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", placeholder, text)
    return text


def shorten(value: Any) -> Any:
    """`value` (a decoded JSON line) with every string longer than `MAX_STRING` cut (marked `…[cut]`) and every
    list cut to its first `MAX_ITEMS`."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else value[:MAX_STRING] + "…[cut]"
    if isinstance(value, list):
        return [shorten(item) for item in value[:MAX_ITEMS]]
    if isinstance(value, dict):
        return {key: shorten(item) for key, item in value.items()}
    return value


def small(text: str) -> str:
    """The JSONL `text` with each line's long strings cut (a line that is not JSON is kept as it is)."""
    lines = []
    for line in text.splitlines():
        try:
            lines.append(json.dumps(shorten(json.loads(line)), separators=(",", ":"), ensure_ascii=False))
        except ValueError:
            lines.append(line)
    return "\n".join(lines) + "\n"


def main(harnesses: list[str]) -> None:
    for harness in harnesses:
        with tempfile.TemporaryDirectory(prefix="fixture-") as temporary:
            scratch = Path(temporary)
            repo = scratch / "repo"
            repo.mkdir()
            (repo / "AGENTS.md").write_text(AGENTS)
            with ScriptedModel(Script([Shell(SHELL), Text(ANSWER)])) as model:
                files = RUNS[harness](model, repo, scratch)
                port = int(model.url.rsplit(":", 1)[1])
            if not files:
                raise SystemExit(f"{harness} wrote no transcript under {scratch}")
            target = OUT / harness
            target.mkdir(parents=True, exist_ok=True)
            for old in target.glob("*.jsonl"):
                old.unlink()
            for index, file in enumerate(files):
                text = small(redact(file.read_text(), repo, scratch, port))
                (target / f"session-{index}.jsonl").write_text(text)
            print(f"{harness}: {len(files)} file(s) -> {target}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(RUNS))
