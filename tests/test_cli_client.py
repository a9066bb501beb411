"""The `resident` command as a client of a running `resident up`: the same bytes and exit statuses as
in-process, a start that loads neither the runtime nor the server stack, commands that need the home
closed saying `resident down`, and discovery files that are stale or forged.

The parity run opens one home in-process for each command (no runtime up), then starts `resident up`
on it and runs the same commands again, which now travel over the API; every command's exit status,
standard output and standard error must match byte for byte. Commands whose output names what they
created (a new record's id) are compared with those ids masked.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from resident import Runtime
from resident.api.discovery import DISCOVERY_FILE
from resident.cli.main import COMMANDS, all_commands
from resident.coordination.tokens import GRANT_TOKEN_ENV
from tests.api_helpers import UpProcess
from tests.cli_helpers import Outcome, expect_error, expect_json, expect_ok, invoke, run_process, withhold
from tests.evolution_helpers import session, skill_folder

# Loaded by a command only when it runs in-process (or serves), never by a client of `resident up`.
HEAVY = [
    "numpy", "lmdb", "pykka", "starlette", "uvicorn", "sse_starlette", "httpx", "yaml", "rich",
    "resident.runtime.runtime", "resident.store.store", "resident.actors", "resident.api.app",
]
_ID = re.compile(r"\b[a-z]+_[0-9a-f]{28}\b")
# Recall's temporal score decays with the clock: the one figure two runs a second apart cannot share.
_SCORES = re.compile(r'"(score|temporal)": [0-9.e-]+|(?<=  )0\.[0-9]{4}(?=  )')


@dataclass(frozen=True)
class Ids:
    shown: str
    withheld: tuple[str, str]
    forgettable: tuple[str, str]
    token: str


def prepare(root: Path) -> tuple[Path, Ids]:
    """A home with records, a skill, a principle, an engagement, a running session and withheld records."""
    home = root / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        deven = rt.member("deven")
        deven.remember("the build cache key includes the lockfile", importance=0.8)
        shown = deven.remember("the staging deploy needs the migration first", kind="world").id
        withheld = (deven.remember("promoted note", canonical=True).id, deven.remember("another", canonical=True).id)
        forgettable = (deven.remember("a note to forget").id, deven.remember("another note to forget").id)
        rt.member("alice").remember("alice keeps the release calendar")
        rt.skills.add(skill_folder(root / "skills", "triage", "Triage incoming bug reports"))
        rt.skills.give("triage", "deven")
        rt.principles.propose("deven", "run the tests before pushing", basis="a broken build")
        rt.engagement.engage("deven", domain="work", project="api")
        token = session(rt, "deven", "triage the queue").token
    for record in withheld:
        withhold(home, record, "a delegated path may not promote to canonical")
    expect_ok(invoke(home, "init"))  # the home gets its resident.toml, so `init` finds it in both runs
    return home, Ids(shown, withheld, forgettable, token)


def reads(root: Path, ids: Ids) -> list[tuple[str, ...]]:
    week = datetime.now(UTC).strftime("%G-W%V")
    a_file = root / "a-file"
    a_file.write_text("not a folder")
    return [
        ("status",), ("status", "--json"), ("memory", "status"), ("memory", "status", "--json"),
        ("recall", "deven", "build cache lockfile", "-k", "1"), ("recall", "deven", "build cache lockfile", "--json"),
        ("cognition", "recall", "deven", "build cache lockfile", "-k", "2"), ("cognition", "capabilities", "--json"),
        ("cognition", "recall", "nobody", "x"), ("cognition", "recall", "deven", "   ", "--json"),
        ("memory", "show", ids.shown, "--as", "deven"), ("memory", "show", ids.withheld[0], "--as", "deven", "--json"),
        ("replication", "status"), ("replication", "status", ids.shown, "--json"),
        ("skills", "list"), ("skills", "list", "--member", "deven", "--json"), ("skills", "read", "triage"),
        ("skills", "search", "triage bugs"), ("skills", "choose", "deven", "triage the bug queue"),
        ("principles", "list"), ("engagement", "show", "deven"), ("questions", "--json"),
        ("evolution", "log", "deven", "--json"), ("report", "weekly", "--week", week), ("progress",),
        ("member", "export", "deven", str(root / "deven.json"), "--json"), ("init",),
        # refusals, the same either way
        ("recall", "nobody", "x"), ("recall", "nobody", "x", "--json"),
        ("memory", "show", "mem_missing", "--as", "deven"), ("remember", "deven", "   "),
        ("skills", "read", "no-such-skill", "--json"), ("principles", "approve", "prn_x"),
        ("evolution", "rollback", "deven@999"), ("replication", "status", "mem_missing"),
        ("correct", "exe_missing", "--note", "wrong file"), ("report", "weekly", "--week", "last week"),
        ("backup", str(a_file / "copy")),
    ]


def member_reads() -> list[tuple[str, ...]]:
    """What a member session runs: as deven, whose grant token is in the environment."""
    return [
        ("recall", "deven", "build cache lockfile", "-k", "1"), ("skills", "list"), ("skills", "read", "triage"),
        ("engagement", "show"), ("principles", "list", "--json"), ("evolution", "log"),
        ("recall", "alice", "release calendar"), ("memory", "status"), ("skills", "give", "triage", "alice"),
    ]


def mutations(ids: Ids, which: int, dest: Path) -> list[tuple[str, ...]]:
    return [
        ("remember", "deven", "the runbook moved to the wiki", "--json"),
        ("memory", "forget", ids.forgettable[which], "--as", "deven", "--reason", "stale"),
        ("reconcile", ids.withheld[which], "--rollback"),
        ("engage", "deven", "--project", "billing"), ("principles", "propose", "ask before deleting", "--member",
                                                    "deven", "--basis", "a lost table", "--json"),
        ("skills", "give", "triage", ("oliver", "victor")[which]), ("backup", str(dest)),
    ]


def steady(outcome: Outcome) -> tuple[int, str, str]:
    """What two runs of a command print when the home is the same: all of it but recall's scores."""
    return outcome.code, _SCORES.sub("<score>", outcome.stdout), _SCORES.sub("<score>", outcome.stderr)


def masked(outcome: Outcome, *words: str) -> tuple[int, str, str]:
    """The outcome with new ids, and `words` (what each run names differently), masked."""

    def mask(text: str) -> str:
        text = _ID.sub("<id>", text)
        for word in words:
            text = text.replace(word, "<word>")
        return re.sub(r'"recorded_at": [0-9.]+|"(created|proposed|at)(_at)?": [0-9.]+', "<time>", text)

    return outcome.code, mask(outcome.stdout), mask(outcome.stderr)


@dataclass
class Parity:
    local: dict[tuple[str, ...], Outcome]
    remote: dict[tuple[str, ...], Outcome]
    local_member: dict[tuple[str, ...], Outcome]
    remote_member: dict[tuple[str, ...], Outcome]
    local_changes: list[Outcome]
    remote_changes: list[Outcome]
    exports: tuple[bytes, bytes]
    root: Path


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory) -> Parity:
    root = tmp_path_factory.mktemp("parity")
    home, ids = prepare(root)
    as_deven: dict[str, str | None] = {GRANT_TOKEN_ENV: ids.token}
    local = {command: invoke(home, *command) for command in reads(root, ids)}
    local_member = {command: invoke(home, *command, env=as_deven) for command in member_reads()}
    first_export = (root / "deven.json").read_bytes()
    with UpProcess(home):
        remote = {command: invoke(home, *command) for command in reads(root, ids)}
        remote_member = {command: invoke(home, *command, env=as_deven) for command in member_reads()}
        remote_changes = [invoke(home, *command) for command in mutations(ids, 0, root / "backup-remote")]
    local_changes = [invoke(home, *command) for command in mutations(ids, 1, root / "backup-local")]
    exports = (first_export, (root / "deven.json").read_bytes())
    return Parity(local, remote, local_member, remote_member, local_changes, remote_changes, exports, root)


@pytest.mark.slow
def test_every_command_answers_the_same_bytes_and_status_through_a_running_api_as_in_process(
    parity: Parity,
) -> None:
    different = [
        f"{' '.join(command)}:\n  in-process {parity.local[command].describe()}\n  remote {outcome.describe()}"
        for command, outcome in parity.remote.items()
        if steady(outcome) != steady(parity.local[command])
    ]
    assert not different, "\n".join(different)
    # The runs said something: answers, and typed refusals with their exit statuses.
    assert parity.remote[("status",)].code == 0
    assert "deven" in parity.remote[("status",)].stdout
    expect_error(parity.remote[("recall", "nobody", "x")], "UnknownMember")
    assert parity.remote[("backup", str(parity.root / "a-file" / "copy"))].stderr.startswith(
        "error: NotADirectoryError: "
    )


@pytest.mark.slow
def test_a_member_session_s_commands_answer_the_same_through_a_running_api(parity: Parity) -> None:
    for command, outcome in parity.remote_member.items():
        local = parity.local_member[command]
        assert steady(outcome) == steady(local), f"{command}:\n{local.describe()}\n{outcome.describe()}"
    expect_error(parity.remote_member[("recall", "alice", "release calendar")], "GrantExceeded")
    expect_error(parity.remote_member[("memory", "status")], "OwnerOnlyAction")
    expect_error(parity.remote_member[("skills", "give", "triage", "alice")], "OwnerOnlyAction")


@pytest.mark.slow
def test_commands_that_change_the_home_say_the_same_through_a_running_api(parity: Parity) -> None:
    for local, remote in zip(parity.local_changes, parity.remote_changes, strict=True):
        assert local.code == 0, local.describe()
        words = (str(parity.root / "backup-local"), str(parity.root / "backup-remote"), "oliver", "victor")
        assert masked(local, *words) == masked(remote, *words), f"{local.describe()}\n{remote.describe()}"


@pytest.mark.slow
def test_an_export_through_the_api_is_the_file_an_in_process_export_writes(parity: Parity) -> None:
    local, remote = (json.loads(data) for data in parity.exports)
    assert local.pop("exported_at") <= remote.pop("exported_at")
    # The in-process run's recalls were counted on the records before the runtime was up.
    for document in (local, remote):
        document.pop("checksum")
        for record in document["records"]:
            record.pop("recall_count", None)
            record.pop("last_recalled_at", None)
    assert local == remote
    assert len(remote["records"]) >= 4


# -- a home whose runtime is up --------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpProcess]:
    home = tmp_path_factory.mktemp("served") / "home"
    expect_ok(invoke(home, "init"))
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        rt.member("deven").remember("the staging deploy needs the migration first")
    with UpProcess(home) as up:
        yield up


LIGHT_RUN = """
import sys
from resident.cli.main import main
for arguments in {runs!r}:
    try:
        main(arguments)
    except SystemExit as exit:
        assert exit.code in (0, None), (arguments, exit.code)
print(sorted(m for m in {heavy!r} if m in sys.modules or any(k.startswith(m + ".") for k in sys.modules)),
      file=sys.stderr)
"""


def test_a_client_of_a_running_api_loads_neither_the_runtime_nor_the_server_stack(served: UpProcess) -> None:
    runs = [["recall", "deven", "staging deploy"], ["remember", "deven", "a note from the light path"], ["--help"],
            ["recall", "deven", "staging", "--json"], ["memory", "status", "--json"]]
    code = LIGHT_RUN.format(runs=runs, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"RESIDENT_HOME": str(served.home), "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    assert "staging deploy" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_the_command_table_names_every_command_of_every_module() -> None:
    loaded = all_commands()
    assert set(loaded) == set(COMMANDS)
    for name, command in loaded.items():
        assert command.callback is not None
        assert command.callback.__module__ == f"resident.cli.{COMMANDS[name][0]}", name
        assert command.get_short_help_str(200) == COMMANDS[name][1]


@pytest.mark.parametrize(
    "command",
    [
        ("init", "--force"), ("init", "--realm", "http://127.0.0.1:8765"), ("doctor",), ("salvage", "DEST"),
        ("restore", "SRC"), ("run", "--writes", "1"), ("bench", "writes", "--count", "1", "--home", "HOME"),
    ],
)
def test_commands_that_need_the_home_closed_say_resident_down_while_it_is_up(
    served: UpProcess, tmp_path: Path, command: tuple[str, ...]
) -> None:
    places = {"DEST": str(tmp_path / "elsewhere"), "SRC": str(tmp_path / "elsewhere"), "HOME": str(served.home)}
    arguments = [places.get(word, word) for word in command]
    message = expect_error(run_process(served.home, *arguments), "RuntimeIsUp", naming=("resident down",))
    assert str(served.pid) in message
    assert not (tmp_path / "elsewhere").exists()


def test_a_plain_init_on_a_home_whose_runtime_is_up_changes_nothing_and_says_so(served: UpProcess) -> None:
    config = (served.home / "resident.toml").read_bytes()
    document = expect_json(run_process(served.home, "init", "--json"))
    assert document == {"home": str(served.home), "config": str(served.home / "resident.toml"), "realm": None,
                        "created": False, "changed": False}
    assert (served.home / "resident.toml").read_bytes() == config


def test_a_backup_while_the_runtime_is_up_is_written_by_it_and_restores_after_it_stops(
    served: UpProcess, tmp_path: Path
) -> None:
    document = expect_json(run_process(served.home, "backup", str(tmp_path / "copy"), "--json"))
    assert document["backup"] == str(tmp_path / "copy")
    assert (tmp_path / "copy" / "manifest.json").exists()
    restored = tmp_path / "restored"
    expect_ok(run_process(restored, "restore", str(tmp_path / "copy")))
    hits = expect_json(run_process(restored, "recall", "deven", "staging deploy", "--json"))["hits"]
    assert [hit["summary"] for hit in hits] == ["the staging deploy needs the migration first"]


def test_a_member_moves_between_two_homes_whose_runtimes_are_up(served: UpProcess, tmp_path: Path) -> None:
    other = tmp_path / "other"
    with Runtime.open(other, realm="none") as rt:
        rt.memory.enable()
    with UpProcess(other):
        exported = expect_json(run_process(served.home, "member", "export", "deven", str(tmp_path / "d.json"),
                                           "--json"))
        imported = expect_json(run_process(other, "member", "import", str(tmp_path / "d.json"), "--json"))
        assert imported["imported"] == exported["records"] >= 1
        hits = expect_json(run_process(other, "recall", "deven", "staging deploy", "--json"))["hits"]
        assert [hit["summary"] for hit in hits][:1] == ["the staging deploy needs the migration first"]
        skill = skill_folder(tmp_path / "skills", "deploy", "Roll out a service")
        expect_ok(run_process(other, "skills", "add", str(skill)))
        assert "deploy" in expect_ok(run_process(other, "skills", "list")).stdout


@pytest.mark.slow
def test_a_discovery_file_left_by_a_killed_runtime_is_ignored_and_the_command_runs_in_process(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    expect_ok(run_process(home, "memory", "enable"))
    up = UpProcess(home)
    up.start()
    assert up.kill() == -signal.SIGKILL
    assert (home / DISCOVERY_FILE).exists()
    status = expect_json(run_process(home, "memory", "status", "--json"))
    assert status["enabled"] is True


@pytest.mark.parametrize(
    ("address", "token", "naming"),
    [
        ("http://192.0.2.1:80", None, "not a loopback"),
        ("http://127.0.0.1:port", None, "never writes"),
        (None, "token\r\nX-Injected: 1", "never writes"),
    ],
    ids=["another host", "not a port", "a header break in the token"],
)
def test_a_forged_discovery_file_is_not_followed(
    served: UpProcess, address: str | None, token: str | None, naming: str
) -> None:
    path = served.home / DISCOVERY_FILE
    genuine = path.read_bytes()
    forged = json.loads(genuine)
    forged["address"] = address or forged["address"]
    forged["token"] = token or forged["token"]
    try:
        path.write_text(json.dumps(forged))
        # The runtime holds the home, so this command cannot open it either: it says so, and sends nothing.
        expect_error(run_process(served.home, "recall", "deven", "x"), "RuntimeNotUp", naming=(naming,))
    finally:
        path.write_bytes(genuine)
    expect_ok(run_process(served.home, "recall", "deven", "x"))


@pytest.mark.parametrize("listen", ["unix", "[::1]:0"])
def test_the_command_reaches_a_runtime_on_a_unix_socket_or_ipv6_loopback(tmp_path: Path, listen: str) -> None:
    home = tmp_path / "home"
    expect_ok(run_process(home, "memory", "enable"))
    address = f"unix:{tmp_path / 'api.sock'}" if listen == "unix" else listen
    with UpProcess(home, listen=address) as up:
        assert up.discovery is not None
        assert up.discovery.address.startswith("unix:" if listen == "unix" else "http://[::1]:")
        record_id, state = expect_ok(run_process(home, "remember", "deven", "reached over the socket")).stdout.split()
        assert state == "pending"
        shown = expect_json(run_process(home, "memory", "show", record_id, "--as", "deven", "--json"))
        assert shown["body"] == "reached over the socket"
