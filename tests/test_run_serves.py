"""While `resident run` runs it is "up" for its home: it serves the loopback API and publishes `api.json`.

So a plan's member sessions call back with their grant tokens (`resident remember`, `recall`, ...)
instead of meeting the home lock, and `resident progress` from another process watches the plan
live. The discovery file goes when the run ends however it ends; a `kill -9` leaves one that every
command recognises as stale. Real processes throughout: the members' commands are `resident`
processes, and the runs watched from outside are `python -m resident.cli run` processes.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from resident import Runtime
from resident.api.discovery import DISCOVERY_FILE, Discovery, read_discovery, running
from resident.api.wire import GRANT_HEADER
from resident.cli.main import EXIT_TERMINATED
from resident.coordination.tokens import new_token
from resident.operations import coordination as coordination_ops
from resident.operations import memory as memory_ops
from resident.runner.run import RunOptions, run
from resident.store.tables import RECORDS

STARTED_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
EXIT_INTERRUPTED = 130

# The member's command: it says it is at work (a file the test waits for), then waits for the test's
# word (another file). The wait is on the file, so the test decides when the task ends.
WAITING_MEMBER = """
import sys, time
from pathlib import Path
started, go = Path(sys.argv[1]), Path(sys.argv[2])
started.write_text("at work")
deadline = time.monotonic() + 60
while not go.exists():
    if time.monotonic() > deadline:
        sys.exit("the test never said go")
    time.sleep(0.02)
"""

# The member's command: calls back into the runtime as itself, with the grant token the run gave
# it, then tries what its grant does not cover; every answer is written down for the test.
CALLING_MEMBER = """
import json, subprocess, sys
from pathlib import Path

def resident(*args):
    done = subprocess.run([sys.executable, "-m", "resident.cli", *args, "--json"], capture_output=True, text=True)
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = done.stdout
    return {"code": done.returncode, "answer": answer, "stderr": done.stderr}

said = {"remember": resident("remember", "alice", "The review found greet.py handles empty names")}
said["recall"] = resident("recall", "alice", "review greet.py empty names")
said["another member"] = resident("recall", "deven", "greet")
said["forget"] = resident("memory", "forget", said["remember"]["answer"]["id"], "--as", "alice")
said["owner only"] = resident("memory", "disable")
Path(sys.argv[1]).write_text(json.dumps(said))
"""


def plan_file(folder: Path, script: str, *args: Path, role: str = "implement", member: str = "deven") -> Path:
    (folder / "member.py").write_text(script)
    command = json.dumps(["{python}", str(folder / "member.py"), *(str(a) for a in args)])
    plan = folder / "plan.toml"
    plan.write_text(
        f'name = "served"\n\n[[tasks]]\nid = "work"\nmember = "{member}"\nrole = "{role}"\n'
        f'harness = "command"\ndir = "{{scratch}}"\ntext = "Do the work."\ncommand = {command}\n'
    )
    return plan


@pytest.mark.slow
def test_a_member_session_calls_back_through_the_runs_api_within_its_grant(tmp_path: Path, private_tmp: Path):
    said = tmp_path / "said.json"
    plan = plan_file(tmp_path, CALLING_MEMBER, said, role="review", member="alice")
    home = tmp_path / "home"
    report = run(RunOptions(plan=plan, realm="none", home=str(home), live=False), Console(file=None, quiet=True))
    assert report.ok, report.failures()
    answers = json.loads(said.read_text())
    remembered, recalled = answers["remember"], answers["recall"]
    assert remembered["code"] == 0, remembered
    assert recalled["code"] == 0, recalled
    record_id = remembered["answer"]["id"]
    assert record_id in [hit["id"] for hit in recalled["answer"]["hits"]]
    # Outside the grant: another member, an action a review is not granted, an owner's command.
    refusals = {name: (answers[name]["code"], answers[name]["answer"]["error"]["type"])
                for name in ("another member", "forget", "owner only")}
    assert refusals == {
        "another member": (1, "GrantExceeded"), "forget": (1, "GrantExceeded"), "owner only": (1, "OwnerOnlyAction")
    }
    assert not (home / DISCOVERY_FILE).exists(), "the run removed api.json when it ended"
    with Runtime.open(home, realm="none") as runtime, runtime._internal.store.reader() as reader:
        record = reader.get(RECORDS, record_id)
        assert record is not None
        (execution,) = runtime.coordinator.executions()
    assert (record.owner, record.bank, record.delegated, record.lifecycle) == (
        "alice", "agent_core/alice", True, "active"
    ), "the member's own memory, written as the session (delegated); the refused forget changed nothing"
    assert execution.outcome == "succeeded"


def test_a_run_that_fails_removes_its_discovery_file_too(tmp_path: Path, private_tmp: Path):
    plan = plan_file(tmp_path, "import sys; sys.exit(3)")
    home = tmp_path / "home"
    report = run(RunOptions(plan=plan, realm="none", home=str(home), live=False), Console(file=None, quiet=True))
    assert not report.ok
    assert not (home / DISCOVERY_FILE).exists()
    assert running(home) is None


def start_run(tmp_path: Path, plan: Path, home: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "RESIDENT_HOME"}
    env["TMPDIR"] = str(tmp_path)
    return subprocess.Popen(
        [sys.executable, "-m", "resident.cli", "run", str(plan), "--home", str(home), "--realm", "none", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    """Wait until `path` exists (the member's command wrote it) while the run is alive."""
    deadline = time.monotonic() + STARTED_TIMEOUT
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def resident(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RESIDENT_HOME", "RESIDENT_GRANT_TOKEN")}
    return subprocess.run(
        [sys.executable, "-m", "resident.cli", "--home", str(home), *args],
        capture_output=True, text=True, env=env, timeout=STARTED_TIMEOUT, check=False,
    )


@pytest.fixture
def waiting_run(tmp_path: Path):
    """A `resident run` process whose one task is at work, waiting for `go`: (process, home, go)."""
    started, go = tmp_path / "started", tmp_path / "go"
    home = tmp_path / "home"
    process = start_run(tmp_path, plan_file(tmp_path, WAITING_MEMBER, started, go), home)
    try:
        wait_for(started, process)
        yield process, home, go
    finally:
        if process.poll() is None:
            go.touch()
            process.kill()
            process.communicate()


@pytest.mark.slow
def test_progress_from_another_process_shows_the_plans_execution_and_session_live(waiting_run):
    process, home, go = waiting_run
    found = running(home)
    assert found is not None, "the run is up for its home"
    assert found.pid == process.pid
    assert stat.S_IMODE((home / DISCOVERY_FILE).stat().st_mode) == 0o600
    # The run holds the home's lock: in-process this command would meet HomeInUse; it asks the API.
    probed = resident(home, "progress", "--json")
    assert probed.returncode == 0, probed.stderr
    progress = json.loads(probed.stdout)
    assert (progress["executions"], progress["running"]) == (1, 1)
    (session,) = progress["sessions"]
    assert (session["member"], session["harness"], session["task"]) == ("deven", "command", "Do the work.")
    shown = resident(home, "progress")
    assert shown.returncode == 0, shown.stderr
    assert session["id"] in shown.stdout
    assert "1 sessions at work" in shown.stdout
    refusals_of_the_runs_api(found)
    second = resident(home, "up", "--json")
    assert second.returncode == 1
    assert "a runtime is already up" in json.loads(second.stdout)["error"]["message"]
    go.touch()
    stdout, stderr = process.communicate(timeout=STOP_TIMEOUT)
    assert process.returncode == 0, stderr
    report = json.loads(stdout)
    assert report["ok"]
    assert report["tasks"]["work"]["session"] == session["id"]
    assert not (home / DISCOVERY_FILE).exists(), "api.json goes when the run ends"
    after = json.loads(resident(home, "progress", "--json").stdout)
    assert (after["running"], after["sessions"]) == (0, []), "in-process once the run has ended"


def refusals_of_the_runs_api(found: Discovery) -> None:
    """The run's API is `up`'s: nothing without the home's token, and a forged grant token acts as no one."""
    with httpx.Client(base_url=found.base_url, trust_env=False, timeout=STOP_TIMEOUT) as client:
        for headers in ({}, {"Authorization": "Bearer " + "x" * len(found.token)}):
            answer = client.get(coordination_ops.PROGRESS.url(), headers=headers)
            assert (answer.status_code, answer.json()["error"]["type"]) == (401, "Unauthorized")
        forged = client.post(
            memory_ops.REMEMBER.url(member="deven"), json={"text": "must not be stored"},
            headers={"Authorization": f"Bearer {found.token}", GRANT_HEADER: new_token()},
        )
        assert (forged.status_code, forged.json()["error"]["type"]) == (403, "GrantInvalid")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "status"), [("SIGTERM", EXIT_TERMINATED), ("SIGINT", EXIT_INTERRUPTED), ("down", EXIT_TERMINATED)]
)
def test_a_run_stopped_by_a_signal_removes_its_discovery_file(waiting_run, how: str, status: int):
    process, home, _ = waiting_run
    assert (home / DISCOVERY_FILE).exists()
    if how == "down":
        # `resident down` stops a run as it stops `up`: the run holds the home's lock, so it is signalled.
        down = resident(home, "down", "--json")
        assert down.returncode == 0, down.stdout
        assert json.loads(down.stdout)["pid"] == process.pid
    else:
        process.send_signal(getattr(signal, how))
    stdout, stderr = process.communicate(timeout=STOP_TIMEOUT)
    assert process.returncode == status, stderr
    assert "Traceback" not in stderr, stderr
    assert json.loads(stdout)["error"]["type"] in ("Terminated", "Interrupted")
    assert not (home / DISCOVERY_FILE).exists()
    assert running(home) is None


@pytest.mark.slow
def test_a_run_killed_with_sigkill_leaves_a_discovery_file_every_command_ignores(waiting_run):
    process, home, _ = waiting_run
    published = read_discovery(home)
    assert published is not None
    assert published.pid == process.pid
    process.kill()
    process.communicate(timeout=STOP_TIMEOUT)
    assert read_discovery(home) == published, "nobody could remove it"
    assert running(home) is None, "a dead pid holding no lock: stale"
    probed = resident(home, "progress", "--json")
    assert probed.returncode == 0, probed.stderr
    assert json.loads(probed.stdout)["executions"] == 1, "the command opened the home itself"
