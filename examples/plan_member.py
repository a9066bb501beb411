"""A member's work in `examples/two-members.toml`, run by `resident run` through the `command` harness.

    python examples/plan_member.py implement|test

It stands in for a coding agent the way the runtime sees one: it runs in the scratch repository
the member was projected into, reads its task from the projected AGENTS.md, does the work, and
writes its transcript (plain `{"role", "text"}` lines) to `$RESIDENT_TRANSCRIPT`. `implement`
writes `greet.py` and remembers that it did, calling back into the runtime the way a member session
does: `resident remember` with the session's grant token (`$RESIDENT_GRANT_TOKEN`, set by the
runtime; `resident run` serves the API for its home while it runs, so the call reaches it). `test`
imports `greet.py` and checks `greet("Ada")`, exiting 1 when the check fails, so the execution fails
with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

GREET = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n'
CHECK = "from greet import greet; assert greet('Ada') == 'Hello, Ada!', greet('Ada')"
LEARNED = "greet.py in the scratch repository: greet(name) returns 'Hello, NAME!'."


def remember(text: str) -> subprocess.CompletedProcess[str]:
    """`resident remember` as this session's member: the environment carries the home and the grant token."""
    member = os.environ["RESIDENT_MEMBER"]
    return subprocess.run(  # noqa: S603 - this interpreter, the resident command, fixed arguments
        [sys.executable, "-m", "resident.cli", "remember", member, text], capture_output=True, text=True, check=False
    )


def task() -> str:
    """The task as projected: the paragraph under `## Task` in AGENTS.md."""
    lines = Path("AGENTS.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("## Task") + 1
    return next(line for line in lines[start:] if line.strip())


def main(mode: str) -> int:
    said = [{"role": "user", "text": task()}]
    if mode == "implement":
        Path("greet.py").write_text(GREET, encoding="utf-8")
        said += [
            {"role": "assistant", "tool": "write_file", "text": f"greet.py:\n{GREET}"},
            {"role": "tool", "tool": "write_file", "text": f"wrote {len(GREET)} bytes to greet.py"},
        ]
        remembered = remember(LEARNED)
        said += [
            {"role": "assistant", "tool": "resident", "text": f"resident remember: {LEARNED}"},
            {"role": "tool", "tool": "resident", "text": remembered.stdout or remembered.stderr},
            {"role": "assistant", "text": "greet.py is written: greet(name) returns a greeting with the name in it."
             + ("" if remembered.returncode == 0 else " Remembering it failed.")},
        ]
        status = remembered.returncode
    else:
        # This interpreter and a fixed check: nothing here comes from outside.
        result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=False)  # noqa: S603 - argv built here, no shell
        said += [
            {"role": "assistant", "tool": "python", "text": CHECK},
            {"role": "tool", "tool": "python", "text": result.stderr or "passed"},
            {"role": "assistant", "text": "greet('Ada') returns 'Hello, Ada!', as the task asks; the check passed."
             if result.returncode == 0 else "greet('Ada') does not return 'Hello, Ada!'; the check failed."},
        ]
        status = result.returncode
    with Path(os.environ["RESIDENT_TRANSCRIPT"]).open("a", encoding="utf-8") as transcript:
        for line in said:
            transcript.write(json.dumps(line) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
