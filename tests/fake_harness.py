"""A stand-in for an agent harness, for end-to-end session tests: a real program the runtime starts.

    python tests/fake_harness.py [--as claude-code|codex|pi|command] [--format claude|plain]
                                 [--secrets FILE] [--exit N] [--wait] [--edit-agents] [--make FILE]
                                 [--call-back] [--call-back-together N] [--say TEXT]

It does what a harness does where the runtime can see it: reads the projected AGENTS.md (and
CLAUDE.md and a SKILL.md when there), writes its transcript where its harness would — Claude
Code's `projects/<dir>/<uuid>.jsonl` under `$CLAUDE_CONFIG_DIR`, a Codex rollout under
`$CODEX_HOME/sessions/YYYY/MM/DD/`, a pi session under `$PI_CODING_AGENT_SESSION_DIR`, or
`$RESIDENT_TRANSCRIPT` for the command harness — and plants in it every secret of `--secrets`
(a JSON object) plus the grant token it was given. `--wait` reports `ready` in the working
directory and waits for a signal; `--edit-agents` rewrites the projected AGENTS.md; `--make FILE`
leaves a work product in the repository; `--call-back` runs `resident recall` as the member;
`--say TEXT` prints TEXT on its standard output.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def _printed(secrets: dict[str, str]) -> str:
    """What `env` and `cat ~/.ssh/id_ed25519` would print: each secret in the shape it lives in."""
    return "\n".join(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{value}\n-----END OPENSSH PRIVATE KEY-----" if name == "KEY_BODY"
        else f"{name}={value}"
        for name, value in secrets.items()
    )


def _claude_lines(session: str, cwd: str, secrets: dict[str, str], seen: str) -> list[dict[str, Any]]:
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    ask, answer, call, result = (str(uuid.uuid4()) for _ in range(4))
    envelope = {"sessionId": session, "cwd": cwd, "version": "2.1.34", "timestamp": now}
    planted = _printed(secrets)
    return [
        {"type": "user", "uuid": ask, "parentUuid": None, **envelope,
         "message": {"role": "user", "content": f"Work on the task in AGENTS.md. It starts: {seen}"}},
        {"type": "assistant", "uuid": call, "parentUuid": ask, **envelope,
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": "Reading the environment first."},
             {"type": "tool_use", "id": "toolu_env", "name": "Bash", "input": {"command": "env | sort"}}]}},
        {"type": "user", "uuid": result, "parentUuid": call, **envelope,
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_env", "content": planted}]}},
        {"type": "assistant", "uuid": answer, "parentUuid": result, **envelope,
         "message": {"role": "assistant", "content": [{"type": "text", "text": (
             "The task is done: the fix is in place and the tests pass; the planted credentials "
             f"were all printed above, and the grant token is {secrets.get('GRANT_TOKEN', '')}.")}]}},
    ]


def _plain_lines(secrets: dict[str, str], seen: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "text": f"Work on the task in AGENTS.md. It starts: {seen}"},
        {"role": "assistant", "tool": "shell", "text": "env | sort"},
        {"role": "tool", "tool": "shell", "text": _printed(secrets)},
        {"role": "assistant", "text": "The task is done and every planted value was printed above, on purpose."},
    ]


def _codex_lines(session: str, cwd: str, secrets: dict[str, str], seen: str) -> list[dict[str, Any]]:
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    planted = _printed(secrets)
    return [
        {"timestamp": now, "type": "session_meta", "payload": {"id": session, "timestamp": now, "cwd": cwd}},
        {"timestamp": now, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"Work on the task in AGENTS.md. It starts: {seen}"}]}},
        {"timestamp": now, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": '{"command":["env"]}', "call_id": "c1"}},
        {"timestamp": now, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "c1", "output": planted}},
        {"timestamp": now, "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "The task is done: the change is made and its tests pass now."}]}},
    ]


def _pi_lines(session: str, cwd: str, secrets: dict[str, str], seen: str) -> list[dict[str, Any]]:
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    planted = _printed(secrets)
    return [
        {"type": "session", "version": 3, "id": session, "timestamp": now, "cwd": cwd},
        {"type": "message", "id": "e1", "parentId": None, "timestamp": now,
         "message": {"role": "user", "content": f"Work on the task in AGENTS.md. It starts: {seen}"}},
        {"type": "message", "id": "e2", "parentId": "e1", "timestamp": now, "message": {
            "role": "toolResult", "toolCallId": "t1", "toolName": "bash",
            "content": [{"type": "text", "text": planted}], "isError": False}},
        {"type": "message", "id": "e3", "parentId": "e2", "timestamp": now, "message": {
            "role": "assistant", "content": [{"type": "text", "text": "The task is done and its tests pass now."}]}},
    ]


def _where(harness: str, cwd: str, session: str) -> Path:
    today = datetime.now(UTC)
    match harness:
        case "claude-code":
            return Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd) / (
                f"{session}.jsonl"
            )
        case "codex":
            return Path(os.environ["CODEX_HOME"]) / "sessions" / today.strftime("%Y/%m/%d") / (
                f"rollout-{today.strftime('%Y-%m-%dT%H-%M-%S')}-{session}.jsonl"
            )
        case "pi":
            folder = "--" + cwd.lstrip("/").replace("/", "-") + "--"
            name = f"{today:%Y-%m-%dT%H-%M-%S}_{session}.jsonl"
            return Path(os.environ["PI_CODING_AGENT_SESSION_DIR"]) / folder / name
        case _:
            return Path(os.environ["RESIDENT_TRANSCRIPT"])


def main(argv: list[str]) -> int:
    def option(name: str, default: str = "") -> str:
        return argv[argv.index(name) + 1] if name in argv else default

    harness = option("--as", "command")
    cwd = str(Path.cwd())
    agents = Path("AGENTS.md").read_text(encoding="utf-8")
    seen = next(line for line in agents.splitlines() if line.startswith("# "))
    secrets: dict[str, str] = json.loads(Path(option("--secrets")).read_text()) if "--secrets" in argv else {}
    secrets["GRANT_TOKEN"] = os.environ.get("RESIDENT_GRANT_TOKEN", "")
    session = str(uuid.uuid4())
    if harness == "claude-code":
        lines = _claude_lines(session, cwd, secrets, seen)
    elif harness == "codex":
        lines = _codex_lines(session, cwd, secrets, seen)
    elif harness == "pi":
        lines = _pi_lines(session, cwd, secrets, seen)
    elif option("--format", "claude") == "plain":
        lines = _plain_lines(secrets, seen)
    else:
        lines = _claude_lines(session, cwd, secrets, seen)
    path = _where(harness, cwd, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as file:
        for line in lines:
            file.write(json.dumps(line) + "\n")
    if "--edit-agents" in argv:
        Path("AGENTS.md").write_text(agents + "\nA note the harness added.\n", encoding="utf-8")
    if "--say" in argv:
        print(option("--say"), flush=True)  # what a harness shows in its terminal
    if "--make" in argv:
        Path(option("--make")).write_text("work the member did\n", encoding="utf-8")
    if "--call-back" in argv:
        member = os.environ["RESIDENT_MEMBER"]
        found = subprocess.run([sys.executable, "-m", "resident.cli", "recall", member, "task", "--json"],
                               capture_output=True, text=True, check=False)
        Path("callback.json").write_text(found.stdout or found.stderr, encoding="utf-8")
    if "--call-back-together" in argv:
        # Several of the member's own calls at the same moment, as a harness running tools in parallel does.
        member = os.environ["RESIDENT_MEMBER"]
        calls = [
            subprocess.Popen([sys.executable, "-m", "resident.cli", "remember", member, f"parallel note {n}", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in range(int(option("--call-back-together")))
        ]
        answers = [call.communicate() for call in calls]
        results = [{"code": c.returncode, "out": out, "err": err} for c, (out, err) in zip(calls, answers, strict=True)]
        Path("callbacks.json").write_text(json.dumps(results), encoding="utf-8")
    if "--wait" in argv:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        Path("ready").write_text(str(os.getpid()), encoding="utf-8")
        while True:
            signal.pause()
    return int(option("--exit", "0"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
