"""Helpers shared by the store tests: opening a home, running the writer, building events."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from resident.actors.writer import StoreWriter
from resident.clock import SystemClock
from resident.messages.events import AnyEvent
from resident.messages.memory import (
    Bank,
    BankCreated,
    MemoryRecord,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
    Scope,
)
from resident.messages.store import Commit, GetWriterStatistics, WriterStatistics
from resident.store.home import HomeLock, ensure_home
from resident.store.store import DEFAULT_MAP_SIZE, MAX_MAP_SIZE, Store
from resident.supervisor import Address, ChildSpec, SupervisionTree, SupervisorSpec
from tests import fork_server

BODY = (
    "Deploying to staging needs the database migration applied first; the last time we skipped it "
    "the API pods crash-looped for twenty minutes until someone ran it by hand. Run `make migrate` "
    "against staging, wait for the job to finish, then roll the deployment."
)

logger = logging.getLogger(__name__)


@contextmanager
def open_home(home: Path, *, map_size: int = DEFAULT_MAP_SIZE, max_map_size: int = MAX_MAP_SIZE) -> Iterator[Store]:
    """Create (if needed), lock and open `home`; close and unlock on exit."""
    ensure_home(home)
    with HomeLock(home):
        store = Store.open(home, map_size=map_size, max_map_size=max_map_size)
        try:
            yield store
        finally:
            store.close()


@contextmanager
def running_writer(store: Store, *, name: str = "writer", **options: Any) -> Iterator[Address]:
    """A supervised `StoreWriter` over `store` (with `options`); yields its address and stops the tree on exit."""
    address = Address(name)
    escalations: list[str] = []
    spec = SupervisorSpec("root", [ChildSpec(address, StoreWriter, kwargs={"store": store, **options})])
    clock = SystemClock()
    tree = SupervisionTree(spec, clock, escalations.append)
    tree.start()
    try:
        yield address
    finally:
        tree.stop(timeout=10.0)
        clock.close()
    assert not escalations, escalations


def statistics(address: Address) -> WriterStatistics:
    result = address.ask(GetWriterStatistics(), 10.0)
    assert isinstance(result, WriterStatistics)
    return result


def memory_on(at: float = 1.0) -> MemorySwitchedOn:
    return MemorySwitchedOn(at=at, provider="hindsight", embedder="hash")


def memory_off(at: float = 1.0) -> MemorySwitchedOff:
    return MemorySwitchedOff(at=at)


def bank(name: str = "agent_core/deven", scope: Scope = "AGENT_CORE", owner: str = "deven") -> Bank:
    return Bank(name=name, scope=scope, owner=owner, created_at=1.0)


def bank_created(name: str = "agent_core/deven", at: float = 1.0) -> BankCreated:
    return BankCreated(at=at, bank=bank(name))


def record(record_id: str, bank_name: str = "agent_core/deven", *, at: float = 2.0, **fields: object) -> MemoryRecord:
    values: dict[str, object] = {
        "id": record_id,
        "summary": f"staging deploy needs the migration first ({record_id})",
        "body": BODY,
        "kind": "experience",
        "bank": bank_name,
        "scope": "AGENT_CORE",
        "owner": "deven",
        "occurred_at": at,
        "recorded_at": at,
        "digest": hashlib.sha256(f"{record_id}:{BODY}".encode()).hexdigest(),
        "source": "session/7f3a",
        "importance": 0.7,
        "importance_reason": "cost an outage",
    }
    values.update(fields)
    return MemoryRecord(**values)  # type: ignore[arg-type]


def admitted(record_id: str, bank_name: str = "agent_core/deven", *, at: float = 2.0) -> RecordAdmitted:
    return RecordAdmitted(at=at, record=record(record_id, bank_name, at=at))


def commit(*events: object) -> Commit:
    return Commit(events=tuple(events))  # type: ignore[arg-type]


def prepare(store: Store, *banks: str) -> None:
    """Switch memory on and create `banks` (default: deven's core bank), directly through the store."""
    events: list[AnyEvent] = [memory_on(), *(bank_created(name) for name in (banks or ("agent_core/deven",)))]
    outcomes = store.commit([Commit(events=(event,)) for event in events])
    for _, error, _ in outcomes:
        assert error is None, error


def tree_digest(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, tuple[str, int]]:
    """Every file and directory under `root`: (sha256 of the content or "dir", permission bits)."""
    result: dict[str, tuple[str, int]] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.name in skip:
            continue
        mode = path.stat().st_mode & 0o777
        if path.is_dir():
            result[relative] = ("dir", mode)
        else:
            result[relative] = (hashlib.sha256(path.read_bytes()).hexdigest(), mode)
    return result


CHILD = Path(__file__).with_name("store_durability_child.py")


class ForkServer(fork_server.ForkServer):
    """`tests/store_durability_child.py --serve`: a writer or a restore per command, to be killed."""

    def __init__(self) -> None:
        super().__init__(CHILD)
