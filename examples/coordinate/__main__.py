"""`python -m examples.coordinate [--workdir DIR]`: Samuel coordinates for real.

Samuel runs in the real Claude Code (`resident session start samuel --role coordinate`), with the scripted
loopback model of the tests (`tests/scripted_model.py`) standing in for its decisions. From inside Claude Code,
through its own shell tool and with its coordinator grant, Samuel dispatches deven (in the real pi, itself
driven by a second scripted model) and alice (a command harness), awaits both, accepts deven's step, rejects
alice's with a reason and reassigns it to oliver. The runtime (`resident up`) runs every dispatched harness in
the background. Then the run's invariants count the members' real writes and the executions' outcomes.

The harnesses come from npm (`.ci/run` installs them into `$RESIDENT_TEST_HARNESSES`, by default
/var/tmp/resident-test-harnesses). Exits 0 when every invariant holds, 1 naming those that do not, 2 when the
harnesses are not installed or the work folder is not empty. See README.md beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from resident import Runtime
from resident.runtime.sessions.launch_files import kept_launches
from resident.runtime.sessions.start import resident_command
from resident.sessions.projection import command_line
from tests.scripted_model import Script, ScriptedModel, Shell, Text

HARNESSES = Path(os.environ.get("RESIDENT_TEST_HARNESSES") or "/var/tmp/resident-test-harnesses")  # noqa: S108 - where .ci/run installs the harnesses, outside any home a sandbox hides
DEVEN_NOTE = "the retry test runs on the injected clock now"
ALICE_NOTE = "release notes drafted"
REJECTION = "the release notes leave out the migration step"
_UP_TIMEOUT = 60.0
_SESSION_TIMEOUT = 600.0


def _binary(name: str) -> Path:
    return HARNESSES / "node_modules" / ".bin" / name


def _pi_agent(folder: Path, model: ScriptedModel) -> Path:
    """pi's agent folder with one provider: the scripted model, speaking Anthropic Messages."""
    folder.mkdir(parents=True)
    provider = {"baseUrl": model.url, "api": "anthropic-messages", "apiKey": "scripted-model-key",
                "models": [{"id": "scripted-model"}]}
    (folder / "models.json").write_text(json.dumps({"providers": {"scripted": provider}}))
    return folder


def _samuel_script(resident: str, work: Path) -> Script:
    """Samuel's decisions, one shell command each, as the model makes Claude Code run them."""
    state = shlex.quote(str(work / "state"))
    pi = shlex.quote(str(_binary("pi")))
    deven_repo, alice_repo = shlex.quote(str(work / "deven-repo")), shlex.quote(str(work / "alice-repo"))
    # alice's command writes as whichever member runs it, so oliver can take it over as it is.
    alice = "sh -c " + shlex.quote(f'{resident} remember "$RESIDENT_MEMBER" "{ALICE_NOTE}"')
    reassigned = f"{shlex.quote(sys.executable)} -c " + shlex.quote(
        "import json,sys; print(json.load(sys.stdin)['reassigned']['id'])"
    )
    return Script([
        Shell(f"mkdir -p {state} && {resident} dispatch deven --task 'make the retry test use the injected clock' "
              f"--harness pi --dir {deven_repo} -- {pi} --provider scripted --model scripted-model "
              f"-p 'Fix the retry test.' > {state}/deven"),
        Shell(f"{resident} dispatch alice --task 'draft the release notes' --harness command --dir {alice_repo} "
              f"-- {alice} > {state}/alice"),
        Shell(f'{resident} await "$(cat {state}/deven)" --timeout 300'),
        Shell(f'{resident} await "$(cat {state}/alice)" --timeout 300'),
        Shell(f'{resident} accept "$(cat {state}/deven)"'),
        Shell(f'{resident} reject "$(cat {state}/alice)" --reason {shlex.quote(REJECTION)} --reassign oliver --json '
              f"| {reassigned} > {state}/oliver"),
        Text("Deven's fix is accepted; alice's release notes were rejected and went to oliver."),
    ])


def _up(home: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    up = subprocess.Popen(  # noqa: S603 - this Python running the resident command
        [sys.executable, "-m", "resident.cli", "--home", str(home), "up"], env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    assert up.stdout is not None
    up.stdout.readline()  # `resident up` announces itself once it serves
    return up


def _invariants(home: Path, work: Path, samuel_status: int) -> list[tuple[str, bool, str]]:
    """Checked through the running `resident up` (oliver's reassigned step may still be at work)."""
    ids = {name: (work / "state" / name).read_text().strip() if (work / "state" / name).exists() else ""
           for name in ("deven", "alice", "oliver")}
    with Runtime.connect(home) as rt:
        oliver = rt.coordinator.wait(ids["oliver"], timeout=300) if ids["oliver"] else None
        deven = rt.coordinator.wait(ids["deven"], timeout=0) if ids["deven"] else None
        alice = rt.coordinator.wait(ids["alice"], timeout=0) if ids["alice"] else None
    # Every session has ended by now (oliver's was awaited): nothing of their launches may be left.
    left = _left_behind(home, work)
    written = {
        name: [r.summary for r in report.records] if report is not None else []
        for name, report in (("deven", deven), ("alice", alice), ("oliver", oliver))
    }
    return [
        ("Samuel's Claude Code session succeeded", samuel_status == 0, f"exit status {samuel_status}"),
        ("Samuel dispatched all three", all(r is not None and r.execution.dispatched_by == "samuel"
                                            for r in (deven, alice, oliver)), json.dumps(ids)),
        ("deven's step (pi) is accepted, with its write", deven is not None and deven.state == "accepted"
         and DEVEN_NOTE in written["deven"], f"{deven.state if deven else 'none'}: {written['deven']}"),
        ("alice's step is rejected with the reason and reassigned to oliver", alice is not None
         and alice.state == "rejected" and alice.execution.rejection == REJECTION
         and alice.execution.reassigned_to == ids["oliver"], f"{alice.state if alice else 'none'}"),
        ("alice and oliver each wrote once", written["alice"] == [ALICE_NOTE] and written["oliver"] == [ALICE_NOTE],
         json.dumps({k: written[k] for k in ("alice", "oliver")})),
        ("oliver's reassigned step succeeded", oliver is not None and oliver.state == "succeeded",
         f"{oliver.state if oliver else 'none'}"),
        ("no launch or grant file is left behind", left == [], json.dumps(left)),
    ]


def _left_behind(home: Path, work: Path) -> list[str]:
    """Launches and grant files still on disk once every session ended (the runtime removes both)."""
    launches = kept_launches(home)
    grants = [str(p.relative_to(work)) for p in work.rglob(".resident-grant-*")]
    return [*launches, *grants]


def run(work: Path) -> list[tuple[str, bool, str]]:
    """The whole example in `work`; its invariants (name, holds, detail)."""
    home = work / "home"
    for repo in ("samuel-repo", "deven-repo", "alice-repo"):
        (work / repo).mkdir(parents=True, exist_ok=True)
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
    resident = command_line(resident_command())
    with ScriptedModel(Script([Shell(f'{resident} remember deven "{DEVEN_NOTE}"'), Text("Fixed.")])) as deven_model, \
            ScriptedModel(_samuel_script(resident, work)) as samuel_model:
        # The runtime runs the dispatched harnesses: pi's provider is in `resident up`'s environment.
        up_env = {**os.environ, "PI_CODING_AGENT_DIR": str(_pi_agent(work / "pi-agent", deven_model))}
        up = _up(home, up_env)
        try:
            claude_env = {
                **os.environ, "ANTHROPIC_BASE_URL": samuel_model.url, "ANTHROPIC_API_KEY": "scripted-model-key",
                "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            }
            samuel = subprocess.run(  # noqa: S603 - this Python running the resident command
                [sys.executable, "-m", "resident.cli", "--home", str(home), "session", "start", "samuel",
                 "--harness", "claude-code", "--role", "coordinate", "--dir", str(work / "samuel-repo"),
                 "--task", "coordinate the release", "--", str(_binary("claude")), "-p", "Coordinate the release.",
                 "--allowedTools", "Bash"],
                env=claude_env, capture_output=True, timeout=_SESSION_TIMEOUT, check=False,
            )
            # oliver's reassigned step may still run under `resident up`: the checks await it there.
            return _invariants(home, work, samuel.returncode)
        finally:
            up.terminate()  # as `resident down` does
            up.wait(_UP_TIMEOUT)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.coordinate", description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="Run here (default: a fresh temporary folder).")
    options = parser.parse_args()
    missing = [name for name in ("claude", "pi") if not _binary(name).exists()]
    if missing:
        print(f"the real harnesses ({', '.join(missing)}) are not installed in {HARNESSES}; .ci/run installs them",
              file=sys.stderr)
        return 2
    work = options.workdir or Path(tempfile.mkdtemp(prefix="resident-coordinate-"))
    if work.exists() and any(work.iterdir()):
        # A second run in the same folder would find the first one's home, ids and writes.
        print(f"{work} is not empty; name a new folder with --workdir (or none: a fresh temporary one)",
              file=sys.stderr)
        return 2
    invariants = run(work.absolute())
    for name, holds, detail in invariants:
        print(f"{'ok ' if holds else 'FAILED'} {name}: {detail}")
    return 0 if all(holds for _, holds, _ in invariants) else 1


if __name__ == "__main__":
    sys.exit(main())
