"""Durability soak: hundreds of `kill -9`s of runtimes that remember, replicate and import.

    python bench/kill9.py [--kills N] [--modes remember,replicate,import] [--seed S] [--dir DIR] [--json]

Three homes (or those of --modes), one per kind of write, are written by processes that are killed with SIGKILL at a
random moment: most after a random number of acknowledged writes, some while the runtime is
still opening (recovering from the previous kill). After every kill a fresh process opens the
home and reads back, once each and without retrying, every write ever acknowledged in it:

* lost — an acknowledged record that is not there (must be 0);
* transient — a read right after the open that failed for a transient reason, e.g. because an
  actor was still starting or rebuilding its index (must be 0: a `get` reads LMDB and waits for
  nothing else);
* partial — an import that is only partly there (must be 0: an import is one transaction, so an
  acknowledged one is whole and one cut by the kill is whole or absent).

The replicating home is enrolled with a loopback Realm that stays up (Realm serves enrolled homes
only) and pushes to it with its token; at the end it is opened once more and synced, and every
acknowledged record must be accepted by Realm (none pending, none in conflict). This is a
benchmark, not a test: it takes minutes, and its figures go to `bench/RESULTS.md`. The processes
are forked from a single-threaded server (`bench/kill9_child.py`) so that a kill costs
milliseconds, not an interpreter start.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec

from resident import Runtime
from resident.memory.portability import build_export
from resident.memory.records import make_record
from resident.messages.memory import Activation, Bank
from resident.realm.process import RealmProcess
from resident.store.tables import RECORDS, SCHEMA_VERSION
from tests.fork_server import ForkServer

CHILD = Path(__file__).with_name("kill9_child.py")
MODES = ("remember", "replicate", "import")
# Share of the kills that land while the runtime is still opening (recovering from the last one),
# at a random instant of its first OPEN_WINDOW seconds.
DURING_OPEN = 0.15
OPEN_WINDOW = 0.6
RECORDS_PER_EXPORT = 20
# At most this many imports (of RECORDS_PER_EXPORT records each) acknowledged between two kills.
IMPORTS_PER_KILL = 15
LINE_TIMEOUT = 60.0


@dataclass
class Tally:
    """What one mode's home went through."""

    kills: int = 0
    kills_during_open: int = 0
    acknowledged: int = 0
    lost: int = 0
    transient: int = 0
    imports_acknowledged: int = 0
    partial_imports: int = 0
    checks: list[dict[str, int]] = field(default_factory=list, repr=False)


def make_exports(directory: Path, count: int) -> list[Path]:
    """`count` exports of deven's core memory, each with its own new records."""
    directory.mkdir(parents=True, exist_ok=True)
    bank = Bank(name="agent_core/deven", scope="AGENT_CORE", owner="deven", created_at=1.0)
    paths: list[Path] = []
    for number in range(count):
        records = [
            make_record(
                record_id=f"mem_soak{number:04d}x{index:02d}", owner="deven", scope="AGENT_CORE", bank=bank.name,
                text=f"imported note {number}.{index}: rotate the signing key before the audit", summary=None,
                kind="experience", counterpart=None, world=None, importance=0.5, importance_reason="",
                confidence=1.0, activation=Activation(), supersedes=None, canonical=False, delegated=False,
                source="soak", occurred_at=None, cites=(), now=1_700_000_000.0 + number,
            )
            for index in range(RECORDS_PER_EXPORT)
        ]
        export = build_export("deven", "member", [bank], records, now=1_700_000_000.0, schema_version=SCHEMA_VERSION)
        path = directory / f"export-{number:04d}.json"
        path.write_bytes(msgspec.json.encode(export))
        paths.append(path)
    return paths


class Soak:
    """Kills writers of one home after another, checking the home after each kill.

    `during_open` is the share of kills that land while the runtime opens, at a random instant of
    the first `open_window` seconds (a writer that ends sooner is not killed).
    """

    def __init__(
        self, root: Path, seed: int, realm_url: str, realm_token: str, exports: list[Path], *,
        during_open: float = DURING_OPEN, open_window: float = OPEN_WINDOW,
    ) -> None:
        self.root = root
        self.random = random.Random(seed)
        self.realm_url = realm_url
        self.realm_token = realm_token
        self.during_open = during_open
        self.open_window = open_window
        self.exports = exports
        self.next_export = 0
        self.server = ForkServer(CHILD)
        self.tallies = {mode: Tally() for mode in MODES}
        self.acks = {mode: root / f"{mode}.acks" for mode in MODES}
        for path in self.acks.values():
            path.write_text("")

    def command(self, mode: str) -> str:
        home = self.root / mode
        match mode:
            case "remember":
                return f"remember {home} 4"
            case "replicate":
                # A command line on the fork server's stdin: the token shows in no process listing.
                return f"replicate {home} {self.realm_url} {self.realm_token}"
            case _:
                batch = self.exports[self.next_export : self.next_export + IMPORTS_PER_KILL + 1]
                return f"import {home} {' '.join(str(path) for path in batch)}"

    def kill_one(self, mode: str) -> None:
        tally = self.tallies[mode]
        pid = self.server.fork(self.command(mode))
        during_open = self.random.random() < self.during_open
        lines, ended = self._until_kill(mode, during_open)
        if not ended:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            while not (line := self._after_kill(pid)).startswith("exited "):
                lines.append(line)
        tally.kills += 1
        tally.kills_during_open += during_open
        self._note(mode, lines)
        self._check(mode)

    def _after_kill(self, pid: int) -> str:
        """The next line from the fork server; a killed process that lingers is described, then waited for."""
        for _ in range(10):
            line = self.server.next_or_none(LINE_TIMEOUT)
            if line is not None:
                return line
            print(f"process {pid} still there {LINE_TIMEOUT:g} s after SIGKILL: {_state(pid)}", file=sys.stderr)
        raise RuntimeError(f"process {pid} did not end after SIGKILL")

    def _until_kill(self, mode: str, during_open: bool) -> tuple[list[str], bool]:
        """Lines the writer printed before the kill (some acks, or those of a random instant of its
        start), and whether it ended on its own meanwhile (an import of its last exports can)."""
        lines: list[str] = []
        if during_open:
            deadline = time.monotonic() + self.random.uniform(0.0, self.open_window)
            while (left := deadline - time.monotonic()) > 0:
                line = self.server.next_or_none(left)
                if line is None:
                    break
                if line.startswith("exited "):
                    # Its `exited` line is the one the kill would wait for: it is not killed.
                    return lines, True
                lines.append(line)
            return lines, False
        wanted = self.random.randint(1, IMPORTS_PER_KILL if mode == "import" else 60)
        acked = 0
        while acked < wanted:
            line = self.server.next_line(LINE_TIMEOUT)
            if line.startswith("exited "):
                raise RuntimeError(f"a writer died on its own: {lines[-5:]}")
            lines.append(line)
            acked += line.startswith("ack ")
        return lines, False

    def _note(self, mode: str, lines: list[str]) -> None:
        tally = self.tallies[mode]
        with self.acks[mode].open("a") as acks:
            for line in lines:
                if line.startswith("ack import "):
                    acks.write(f"import {line[len('ack import '):]}\n")
                    tally.imports_acknowledged += 1
                    self.next_export += 1
                elif line.startswith("importing "):
                    acks.write(f"attempt {line[len('importing '):]}\n")
                elif line.startswith("ack "):
                    acks.write(f"record {line[4:]}\n")
                    tally.acknowledged += 1
        # An export cut by the kill is imported again first next time (whole or absent, it is then
        # skipped or imported whole).

    def _check(self, mode: str) -> None:
        self.server.fork(f"check {self.root / mode} {self.acks[mode]}")
        line = self.server.next_line(LINE_TIMEOUT)
        while not line.startswith("checked "):
            if line.startswith("exited "):
                raise RuntimeError(f"the check of {mode} failed; see the fork server's stderr")
            line = self.server.next_line(LINE_TIMEOUT)
        counts = json.loads(line[len("checked ") :])
        self.server.next_line(LINE_TIMEOUT)  # exited
        tally = self.tallies[mode]
        tally.checks.append(counts)
        tally.lost = max(tally.lost, counts["missing"])
        tally.transient += counts["transient"]
        tally.partial_imports = max(tally.partial_imports, counts["partial"])


def _state(pid: int) -> str:
    """What the kernel says the process is doing (Linux), e.g. blocked in uninterruptible I/O."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError as error:
        return f"unknown ({error})"
    state = next((line for line in status.splitlines() if line.startswith("State:")), "State: ?")
    return f"{state}, waiting in {wchan or '?'}"


def final_replication_check(home: Path, realm_url: str, realm_token: str, acks: Path) -> dict[str, int]:
    """Open the replicating home once more and sync: every acknowledged record must reach Realm.

    The sync's counts (every record of the home, by state), and `acknowledged_synced`: how many of
    the records whose acknowledgement the soak saw are `synced`.
    """
    acknowledged = [line[len("record ") :] for line in acks.read_text().splitlines() if line.startswith("record ")]
    with Runtime.open(home, realm=realm_url, realm_token=realm_token) as runtime:
        counts = dict(runtime.replication.sync(timeout=120.0).counts)
        with runtime._internal.store.reader() as reader:
            states = [getattr(reader.get(RECORDS, record_id), "replication", None) for record_id in acknowledged]
    return {**counts, "acknowledged": len(acknowledged), "acknowledged_synced": states.count("synced")}


def run(kills: int, root: Path, *, modes: tuple[str, ...] = MODES, seed: int = 14) -> dict[str, Any]:
    """Soak `kills` kills over `modes` in turn, in homes under `root`; the figures."""
    root.mkdir(parents=True, exist_ok=True)
    exports = make_exports(root / "exports", (kills // len(modes) + 1) * IMPORTS_PER_KILL + 1)
    realm = RealmProcess(root / "realm")
    # Realm serves enrolled homes only: the replicating home gets its token before the server starts.
    token = realm.enroll("kill9", rotate=True)
    realm.start()
    started = time.perf_counter()
    soak = Soak(root, seed, realm.url, token, exports)
    final: dict[str, int] = {}
    try:
        for kill in range(kills):
            soak.kill_one(modes[kill % len(modes)])
        if "replicate" in modes:
            final = final_replication_check(root / "replicate", realm.url, token, soak.acks["replicate"])
    finally:
        soak.server.close()
        realm.stop()
    return {
        "kills": sum(t.kills for t in soak.tallies.values()),
        "seconds": round(time.perf_counter() - started, 1),
        "modes": {mode: {k: v for k, v in asdict(t).items() if k != "checks"} for mode, t in soak.tallies.items()
                  if mode in modes},
        "replication_after_soak": final,
        "home": str(root),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=330, help="kills in all, spread over the modes")
    parser.add_argument("--modes", default=",".join(MODES), help=f"the modes to soak, in turn (of {', '.join(MODES)})")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--dir", type=Path, default=None, help="where the homes go (default: a temporary dir)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    options = parser.parse_args()
    modes = tuple(options.modes.split(","))
    if not modes or any(mode not in MODES for mode in modes):
        parser.error(f"--modes takes some of {', '.join(MODES)}, separated by commas")
    root = options.dir or Path(tempfile.mkdtemp(prefix="resident-kill9-"))
    report = run(options.kills, root, modes=modes, seed=options.seed)
    if options.json:
        print(json.dumps(report))
        return
    print(f"{report['kills']} kills in {report['seconds']:.0f} s ({root})")
    for mode, tally in report["modes"].items():
        print(
            f"  {mode:9} kills {tally['kills']:4} (during open {tally['kills_during_open']:3})  acknowledged "
            f"{tally['acknowledged']:6}  imports {tally['imports_acknowledged']:4}  lost {tally['lost']}  "
            f"transient {tally['transient']}  partial imports {tally['partial_imports']}"
        )
    print(f"  replication after the soak: {report['replication_after_soak']}")


if __name__ == "__main__":
    main()
