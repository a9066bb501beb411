"""Recovering a session transcript: redaction and parsing against the work of merely reading it.

    python -m bench.sessions [--mb 16] [--repeat 3] [--json]

A synthetic Claude Code transcript of about `--mb` MiB (prompts, assistant text, tool calls with
inputs, tool results holding whole files, one planted credential every 50 lines) is processed in
stages, each on the same bytes, best of `--repeat`:

1. **read**: decode every line as JSON (msgspec) — the least any recovery must do;
2. **redact**: decode, redact every string, encode the changed lines again (`redact_lines`);
3. **recover**: all of the above, plus parsing, ordering by parent links, numbering and compression
   (`resident.sessions.transcript.recover`);
4. **import**: `rt.sessions.import_sessions` of the file into a fresh home: recovery plus the durable
   commit of the raw bytes and every turn.

The figures to read are the ratios to stage 1 in the same run: absolute throughput moves with the
machine's load.
"""

from __future__ import annotations

import argparse
import json
import secrets
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from resident import Runtime
from resident.sessions.lines import redact_lines
from resident.sessions.redaction import Redactor
from resident.sessions.transcript import TranscriptFile, recover

_FILE = "".join(f"    {i:4d}\tdef step_{i}(state):\n        return state.advance({i}, clock=FAKE_CLOCK)\n"
                for i in range(120))


def _line(kind: str, parent: str | None, session: str, message: dict[str, Any]) -> tuple[str, bytes]:
    node = str(uuid.uuid4())
    line = {"type": kind, "uuid": node, "parentUuid": parent, "sessionId": session, "cwd": "/home/alice/src/app",
            "timestamp": "2026-03-02T09:00:00.000Z", "version": "2.1.34", "message": message}
    return node, msgspec.json.encode(line)


def transcript(megabytes: float) -> bytes:
    """A Claude Code transcript of about `megabytes` MiB, with a credential planted every 50 lines."""
    session = str(uuid.uuid4())
    lines: list[bytes] = []
    size = 0
    parent: str | None = None
    turn = 0
    while size < megabytes * (1 << 20):
        turn += 1
        secret = f" GITHUB_TOKEN=ghp_{secrets.token_hex(18)}" if turn % 50 == 0 else ""
        call = f"toolu_{turn:08d}"
        steps: list[tuple[str, dict[str, Any]]] = [
            ("user", {"role": "user", "content": f"Step {turn}: make the retry test use the fake clock.{secret}"}),
            ("assistant", {"role": "assistant", "content": [
                {"type": "text", "text": f"Reading module {turn} before I change it."},
                {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": f"/src/app/m{turn}.py"}}]}),
            ("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": _FILE}]}),
            ("assistant", {"role": "assistant", "content": [{"type": "text", "text": (
                f"Module {turn} now takes the clock as an argument; the test drives a fake one and no longer "
                "sleeps, so a loaded CI machine cannot make it fail.")}]}),
        ]
        for kind, message in steps:
            parent, data = _line(kind, parent, session, message)
            lines.append(data)
            size += len(data) + 1
    return b"\n".join(lines) + b"\n"


def _best(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def _read(data: bytes) -> None:
    for chunk in data.split(b"\n"):
        if chunk:
            msgspec.json.decode(chunk)


def _import(data: bytes) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as folder:
        root = Path(folder)
        (root / "history").mkdir()
        (root / "history" / f"{uuid.uuid4()}.jsonl").write_bytes(data)
        with Runtime.open(root / "home", realm="none") as runtime:
            (candidate,) = runtime.sessions.candidates("claude-code", root / "history")
            started = time.perf_counter()
            report = runtime.sessions.import_sessions([candidate.id], member="deven", harness="claude-code",
                                                      path=root / "history")
            seconds = time.perf_counter() - started
            assert len(report.imported) == 1
            return seconds


def measure(megabytes: float, repeat: int) -> dict[str, Any]:
    data = transcript(megabytes)
    key = secrets.token_bytes(32)
    stages = {
        "read": _best(lambda: _read(data), repeat),
        "redact": _best(lambda: redact_lines(data, Redactor(key)), repeat),
        "recover": _best(lambda: recover("claude-code", [TranscriptFile("bench.jsonl", data)], Redactor(key)), repeat),
        "import": min(_import(data) for _ in range(max(1, repeat - 1))),
    }
    mib = len(data) / (1 << 20)
    return {
        "mib": round(mib, 2),
        "lines": data.count(b"\n"),
        "stages": {
            name: {"seconds": round(seconds, 3), "mib_per_second": round(mib / seconds, 1),
                   "x_read": round(seconds / stages["read"], 1)}
            for name, seconds in stages.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=16.0, help="transcript size in MiB")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each stage (the best counts)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.mb, args.repeat)
    if args.json:
        print(json.dumps(result))
        return
    print(f"transcript: {result['mib']} MiB, {result['lines']} lines")
    for name, stage in result["stages"].items():
        speed = f"{stage['mib_per_second']:7.1f} MiB/s"
        print(f"{name:8s} {stage['seconds']:7.3f} s  {speed}  {stage['x_read']:5.1f}x read")


if __name__ == "__main__":
    main()
