"""`resident run`: prepare a home and a Realm, play a plan with live progress, check invariants.

Without an explicit home (`--home` or `$RESIDENT_HOME`) a run gets a fresh scratch home
(`resident-run-*` in the temporary folder), so a demo never writes into the user's own memories;
it is removed when the run succeeds unless `--keep`, and kept for a look when it fails. A home the
run creates, scratch or named but not there yet, gets memory turned on for the run. A home that
already exists must have memory on: otherwise the run is refused before anything starts (no Realm,
no actors), naming `resident memory enable`. `--realm auto` starts a loopback Realm as a child
process for the run (and takes it down for the plan's outage), `URL` uses a running Realm,
`none` runs without replication.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from resident.actors.replication import ReplicationSettings
from resident.api.server import serving
from resident.config import DEFAULT_TEAM, Config, MemberConfig, load_config, scratch_home, team_of
from resident.coordination.default_plan import MAX_WRITES, default_plan
from resident.coordination.plan import Plan, load_plan
from resident.errors import ActorUnavailable, InvalidInput, MemoryDisabled
from resident.messages.memory import MemoryRecord
from resident.messages.replication import ReplicationCounts
from resident.messages.supervision import SupervisorStatistics
from resident.realm.process import realm_for
from resident.realm.tokens import read_token_file
from resident.runner.display import live_view, summary_view
from resident.runner.harness import RunHarness, RunMetrics
from resident.runner.invariants import Invariant, check_invariants, withheld_records
from resident.runtime import Runtime
from resident.runtime.memory.switch import require_memory
from resident.store.home import CONFIG_FILE, HOME_ENV, HomeLock, current_store_dir, ensure_home, resolve_home
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.store import Store
from resident.store.tables import MEMORY_CONFIG

__all__ = ["MAX_WRITES", "RUN_REPLICATION", "RunOptions", "RunReport", "run"]

# A run shows an outage and its recovery in seconds, so replication retries and polls briskly.
RUN_REPLICATION = ReplicationSettings(
    wait_initial=0.1, wait_max=0.5, jitter=0.1, retry_later=1.0, poll_interval=0.3, request_timeout=1.0
)
FINAL_SYNC_TIMEOUT = 30.0


@dataclass(frozen=True)
class RunOptions:
    plan: Path | None = None
    members: int | None = None
    writes: int = 30
    realm: str = "auto"
    home: str | None = None
    live: bool = True
    keep: bool = False
    # With a Realm given by URL: a file holding its admin token, for the plan's invalidation.
    realm_admin_token_file: Path | None = None
    # The fail-closed check through a command's own read surfaces on the closed home at the end (`resident run`
    # passes the CLI's; a run started from Python has none, and reports none).
    read_surfaces_probe: Callable[[Path, list[MemoryRecord]], Invariant] | None = None


@dataclass
class RunReport:
    home: Path
    scratch: bool
    removed: bool
    plan: str
    realm: str | None
    seconds: float
    metrics: RunMetrics
    replication: ReplicationCounts | None
    statistics: SupervisorStatistics
    invariants: list[Invariant] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(invariant.ok for invariant in self.invariants)

    def failures(self) -> list[Invariant]:
        return [invariant for invariant in self.invariants if not invariant.ok]


def _explicit_home(options: RunOptions) -> Path | None:
    """The home named by `--home` or `$RESIDENT_HOME`, if one is; checked, not yet created."""
    if options.home is None and not os.environ.get(HOME_ENV):
        return None
    return resolve_home(options.home)


def _scratch_team(options: RunOptions) -> Config:
    size = options.members or len(DEFAULT_TEAM)
    if size < 2:
        raise InvalidInput("a run needs at least 2 members: the coordinator and one member")
    return team_of(size)


def _memory_to_enable(home: Path) -> bool:
    """Whether the run turns memory on: yes in a home it creates; in an existing one memory must be on.

    Read from the store without starting anything, so a refused run leaves nothing running. The
    claim on the home also says early when another process has it open, and leaves the lock file
    that marks the folder as a home before the run's Realm puts its files in it.
    """
    with HomeLock(home):
        if not (current_store_dir(home) / "data.mdb").exists():
            return True
        store = Store.open(home, readonly=True)
        try:
            with store.reader() as reader:
                memory = reader.get(MEMORY_CONFIG, "memory")
        finally:
            store.close()
    if memory is None or not memory.enabled:
        raise MemoryDisabled(f"{MEMORY_OFF_MESSAGE} (home {home})")
    return False


def _select_members(config: Config, count: int | None) -> list[MemberConfig]:
    roster = list(config.members)
    if count is None:
        return roster
    if not 2 <= count <= len(roster):
        raise InvalidInput(
            f"--members must be 2..{len(roster)} for this home's roster; add members to resident.toml for more"
        )
    coordinator = config.member(config.coordinator)
    others = [m for m in roster if m.name != coordinator.name]
    return [coordinator, *others[: count - 1]]


def _plan(options: RunOptions, config: Config) -> Plan:
    chosen = _select_members(config, options.members)
    names = [m.name for m in chosen]
    if options.plan is not None:
        return load_plan(options.plan, members=config.member_names(), coordinator=config.coordinator)
    if not 1 <= options.writes <= MAX_WRITES:
        raise InvalidInput(f"--writes must be 1..{MAX_WRITES}")
    plan = default_plan(
        [(m.name, m.role) for m in chosen], config.coordinator, writes=options.writes,
        with_realm=options.realm != "none",
        with_invalidation=options.realm == "auto" or options.realm_admin_token_file is not None,
    )
    if not plan.tasks:
        raise InvalidInput(f"the default plan needs a member besides the coordinator; the members are {names}")
    return plan


def _admin_token(options: RunOptions) -> str | None:
    """The admin token of a Realm given by URL, from --realm-admin-token-file (None without it)."""
    if options.realm_admin_token_file is None:
        return None
    if options.realm in ("auto", "none"):
        raise InvalidInput(
            "--realm-admin-token-file goes with --realm URL; a Realm the run starts (auto) lends its own token"
        )
    return read_token_file(options.realm_admin_token_file)


def _prepare(options: RunOptions) -> tuple[Path, bool, Plan, bool]:
    """(home, scratch, plan, whether to turn memory on): everything checked before anything starts."""
    explicit = _explicit_home(options)
    if explicit is None:
        team = _scratch_team(options)
        plan = _plan(options, team)
        return scratch_home("resident-run-", team), True, plan, True
    home = ensure_home(explicit)
    plan = _plan(options, load_config(home / CONFIG_FILE))
    return home, False, plan, _memory_to_enable(home)


def run(options: RunOptions, console: Console) -> RunReport:
    """Play the plan; everything is checked (plan, roster, memory) before anything runs."""
    home, scratch, plan, enable_memory = _prepare(options)
    given_admin_token = _admin_token(options)
    started = time.monotonic()
    url, process = realm_for(options.realm, home / "run-realm")
    try:
        # A Realm the run started gets this home enrolled, and lends the run its admin token for
        # the plan's invalidations; a Realm given by URL uses the home's own token.
        token = process.enroll("run", rotate=True) if process is not None else None
        admin_token = process.admin_token() if process is not None else given_admin_token
        with Runtime.open(home, realm=url or "none", realm_token=token, replication=RUN_REPLICATION) as runtime:
            if enable_memory:
                runtime.memory.enable()
            else:
                require_memory(runtime.memory.status())
            # While the plan plays the run is "up" for its home: its members' own `resident` calls
            # (with their grant tokens) and `resident progress` from another shell go through the API.
            with serving(runtime):
                harness = RunHarness(runtime, plan, realm_url=url, realm_process=process, admin_token=admin_token)
                if url is not None and admin_token is None and options.plan is None:
                    harness.metrics.notes.append(
                        "the plan's invalidation was left out: give --realm-admin-token-file for a Realm given by URL"
                    )
                _play_until_done_or_stopped(runtime, harness, console if options.live else None)
                harness.note_session_writes()
                counts = runtime.replication.sync(timeout=FINAL_SYNC_TIMEOUT) if url else None
                report = RunReport(
                    home=home, scratch=scratch, removed=False, plan=plan.name, realm=url,
                    seconds=time.monotonic() - started, metrics=harness.metrics, replication=counts,
                    statistics=runtime.statistics(),
                )
                report.invariants = check_invariants(runtime, harness.metrics, counts)
                report.statistics = runtime.statistics()
                withheld = withheld_records(runtime)
        # The CLI's read surfaces are probed in this process on the closed home (no API by then:
        # api.json went when the block above ended), as a command run after the run would see them.
        if options.read_surfaces_probe is not None:
            report.invariants.append(options.read_surfaces_probe(home, withheld))
    finally:
        if process is not None:
            process.stop()
    if scratch and report.ok and not options.keep:
        # The scratch home is the `home` folder inside the run's own `resident-run-*` folder.
        shutil.rmtree(home.parent)
        report.removed = True
    if options.live:
        console.print(summary_view(report.metrics, report.replication, report.statistics, report.invariants))
    return report


def _quiet_interrupts(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Ctrl-C or SIGTERM raised inside one of the plan's tasks stops the run; it is not also a logged error.

    The interruption lands in whatever task runs at that moment; asyncio stores it there, stops the
    loop, and would later log that task's exception as never retrieved (with a traceback).
    """
    if isinstance(context.get("exception"), KeyboardInterrupt):
        return
    loop.default_exception_handler(context)


def _play_until_done_or_stopped(runtime: Runtime, harness: RunHarness, console: Console | None) -> None:
    """Play the plan on an event loop; SIGTERM cancels it there, then stops the run as SIGTERM does elsewhere.

    Left to the Python handler, the exception SIGTERM raises (see `resident.cli.main`) lands in
    whichever of the plan's tasks runs at that moment, and asyncio's shutdown then reports the
    tasks it interrupted as tracebacks. The loop's own handler cancels the plan instead, the way
    asyncio treats Ctrl-C; once the loop has closed, the handler that was there runs as it would have.
    """
    previous = signal.getsignal(signal.SIGTERM)
    received: list[int] = []

    async def main() -> None:
        task = asyncio.current_task()
        if callable(previous) and task is not None and threading.current_thread() is threading.main_thread():

            def cancel() -> None:
                received.append(signal.SIGTERM)
                task.cancel()

            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, cancel)
        await _play(runtime, harness, console)

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        if not received:
            raise
    finally:
        # Closing the loop reset SIGTERM to the default action; the run's own handler comes back.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
    if received and callable(previous):
        previous(signal.SIGTERM, None)


async def _play(runtime: Runtime, harness: RunHarness, console: Console | None) -> None:
    asyncio.get_running_loop().set_exception_handler(_quiet_interrupts)
    playing = asyncio.create_task(harness.run())
    if console is None:
        await playing
        return
    counts: ReplicationCounts | None = None
    last_fetch = 0.0
    with Live(live_view(harness.metrics, None, None), console=console, refresh_per_second=4, transient=True) as live:
        while not playing.done():
            await asyncio.wait({playing}, timeout=0.25)
            if time.monotonic() - last_fetch >= 1.0:
                last_fetch = time.monotonic()
                try:
                    status = await asyncio.to_thread(runtime.replication.status)
                except ActorUnavailable:
                    status = None
                if isinstance(status, ReplicationCounts):
                    counts = status
            live.update(live_view(harness.metrics, counts, runtime.statistics()))
    await playing

