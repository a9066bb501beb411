"""What a coordination run checks through the command itself, on the closed home at its end.

The runner (`resident.runner`) knows nothing of the command; `resident run` hands it this probe, so the
fail-closed invariant is checked on the CLI's own read surfaces too: `memory show`, `recall` and `member export`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from click.testing import CliRunner

from resident.messages.memory import MemoryRecord
from resident.runner.invariants import Invariant

__all__ = ["check_cli_read_surfaces"]


def check_cli_read_surfaces(home: Path, withheld: list[MemoryRecord]) -> Invariant:
    """The same fail-closed check through the CLI, on the closed home: show, recall and export."""
    from resident.cli.main import cli  # noqa: PLC0415 - main imports this module's command group

    runner = CliRunner()
    problems: list[str] = []

    def run(*args: str) -> tuple[int, str]:
        result = runner.invoke(cli, ["--home", str(home), *args, "--json"], catch_exceptions=True)
        return result.exit_code, result.stdout

    for record in withheld:
        author = record.author or record.owner
        code, out = run("memory", "show", record.id, "--as", author)
        if code == 0 or _error_type(out) not in ("RecordWithheld", "RecordCorrupted"):
            problems.append(f"memory show served withheld {record.id}")
        code, out = run("recall", author, record.summary[:200], "-k", "100")
        if code != 0 or record.id in out:
            problems.append(f"recall (CLI) served withheld {record.id}" if code == 0 else f"recall failed: {out}")
    with tempfile.TemporaryDirectory() as scratch:
        for name in sorted({r.author or r.owner for r in withheld}):
            path = Path(scratch) / f"{name}.json"
            code, out = run("member", "export", name, str(path))
            exported = {item["id"] for item in json.loads(path.read_bytes())["records"]} if path.exists() else set()
            problems += [f"member export carried withheld {r.id}" for r in withheld if r.id in exported]
            if code != 0:
                problems.append(f"member export failed: {out}")
    detail = f"{len(withheld)} withheld records, none shown, recalled or exported by the CLI"
    return Invariant("nothing withheld was served by the CLI", not problems, "; ".join(problems[:3]) or detail)


def _error_type(out: str) -> str:
    try:
        return str(json.loads(out)["error"]["type"])
    except (ValueError, KeyError, TypeError):
        return ""
