"""The actor tree of a runtime: which actors exist, in what order, under which supervisor.

    root (one_for_one)
    ├── writer          the single LMDB write path (group commit)
    ├── substrate       Hindsight: embed, index, recall (restarts with backoff)
    ├── embedder        the embedding worker: runs any embedder but the hash one (a model, a server)
    ├── replication     pushes pending records to Realm, polls invalidations
    ├── coordinator     Samuel: dispatch under grants, progress from execution records
    ├── skills          the team skill library: search, and ranking a member's skills for a task
    ├── knowledge       the derived page index (only when `[knowledge] enabled = true`)
    └── members (one_for_one)
        └── one actor per member of the roster
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from resident.actors import substrate as substrate_actor
from resident.actors.awaiting import Awaiting
from resident.actors.cognition_service import CognitionService
from resident.actors.coordinator import Coordinator
from resident.actors.embedding import EmbeddingWorker
from resident.actors.member import MemberActor
from resident.actors.replication import Replication, ReplicationSettings
from resident.actors.skills import SkillLibrary
from resident.actors.substrate import Substrate
from resident.actors.writer import StoreWriter
from resident.config import Config, MemberConfig
from resident.errors import SubstrateUnavailable
from resident.memory.embedding import Embedder
from resident.messages.memory import (
    BankCreated,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
    RecordRetracted,
    RecordSuperseded,
)
from resident.messages.replication import RecordConflicted, RecordInvalidated, RecordsRestored, RecordsSynced
from resident.runtime.cognition.bridge import read_token
from resident.store.store import Store
from resident.supervisor import Address, Backoff, ChildSpec, StatisticsBoard, Supervisor, SupervisorSpec

__all__ = ["Wiring", "build_wiring"]

# Writes wait on an fsync that a busy disk can stretch to tens of milliseconds per commit.
DEFAULT_TIMEOUT = 30.0


@dataclass
class Wiring:
    """The root spec and every address, by the path `statistics()` shows."""

    spec: SupervisorSpec
    store: Store
    writer: Address
    substrate: Address
    embedder: Address
    replication: Address
    coordinator: Address
    members: dict[str, Address]
    skills: Address
    addresses: dict[str, Address] = field(default_factory=dict)
    knowledge: Address | None = None

    def member_spec(self, member: MemberConfig) -> ChildSpec:
        """The child spec of one member actor (also used to add a member to a running tree)."""
        address = Address(member.name, default_timeout=DEFAULT_TIMEOUT)
        self.members[member.name] = address
        self.addresses[f"members/{member.name}"] = address
        return ChildSpec(
            address,
            MemberActor,
            kwargs={
                "member": member, "store": self.store, "substrate": self.substrate, "writer": self.writer,
                "library": self.skills,
            },
        )

    def forget_member(self, name: str) -> None:
        """Drop the address of a member whose start failed, so a later attempt starts clean."""
        address = self.members.pop(name, None)
        self.addresses.pop(f"members/{name}", None)
        if address is not None:
            address.close(f"member {name} did not start")


def build_wiring(
    store: Store,
    config: Config,
    embedder_factory: Callable[[str], Embedder],
    realm_url: str | None,
    replication_settings: ReplicationSettings | None = None,
    *,
    realm_token: str | None = None,
    home: Path | None = None,
    realm_ca: str | None = None,
) -> Wiring:
    writer = Address("writer", default_timeout=DEFAULT_TIMEOUT)
    substrate = Address("substrate", default_timeout=DEFAULT_TIMEOUT, timeout_error=SubstrateUnavailable)
    embedder = Address("embedder", default_timeout=DEFAULT_TIMEOUT)
    replication = Address("replication", default_timeout=DEFAULT_TIMEOUT)
    coordinator = Address("coordinator", default_timeout=DEFAULT_TIMEOUT)
    skills = Address("skills", default_timeout=DEFAULT_TIMEOUT)
    subscribers: dict[type, list[Address]] = {
        event: [substrate]
        for event in (
            BankCreated, RecordAdmitted, RecordSuperseded, RecordRetracted, MemorySwitchedOn, MemorySwitchedOff,
            RecordsSynced, RecordsRestored, RecordConflicted, RecordInvalidated,
        )
    }
    # Only a wake-up: replication reads what to push from the pending index, whatever tells are lost.
    subscribers[RecordAdmitted].append(replication)
    subscribers[MemorySwitchedOn].append(embedder)
    wiring = Wiring(
        spec=SupervisorSpec("root", []), store=store, writer=writer, substrate=substrate, embedder=embedder,
        replication=replication, coordinator=coordinator, members={}, skills=skills,
    )
    knowledge = _knowledge_spec(store) if config.knowledge.enabled else None
    cognition = _cognition_spec(home, config) if config.cognition.supervise and home is not None else None
    member_specs = [wiring.member_spec(member) for member in (*config.members, *config.extra_members)]
    members_spec = SupervisorSpec("members", member_specs, strategy="one_for_one", intensity=10, period=10.0)
    members_address = Address("members")
    root = SupervisorSpec(
        "root",
        [
            ChildSpec(writer, StoreWriter, kwargs={"store": store, "subscribers": subscribers}),
            ChildSpec(
                substrate,
                Substrate,
                kwargs={"store": store, "writer": writer, "embedder_factory": embedder_factory, "worker": embedder},
                backoff=Backoff(min=0.01, max=2.0, jitter=0.2, reset_after=30.0),
                # The index is built after the start ping is answered: the start is the same at any size.
                start_timeout=substrate_actor.START_TIMEOUT,
                # A stop persists the index (a few seconds at a million memories); a process that dies
                # meanwhile leaves the previous copy whole.
                shutdown_timeout=60.0,
            ),
            ChildSpec(
                embedder,
                EmbeddingWorker,
                kwargs={"store": store, "substrate": substrate, "embedder_factory": embedder_factory},
                # A model process that keeps dying is restarted ever more slowly, never in a tight loop.
                backoff=Backoff(min=0.1, max=10.0, jitter=0.2, reset_after=30.0),
                # Its handler may be inside a stalled request; stopping never waits for that long.
                shutdown_timeout=2.0,
            ),
            ChildSpec(
                replication,
                Replication,
                kwargs={
                    "store": store, "writer": writer, "realm_url": realm_url, "settings": replication_settings,
                    "realm_token": realm_token, "realm_ca": realm_ca,
                },
                backoff=Backoff(min=0.05, max=5.0, jitter=0.2, reset_after=30.0),
            ),
            ChildSpec(
                coordinator,
                Coordinator,
                # One `Awaiting` for every incarnation: a pending `await` outlives a coordinator restart.
                kwargs={"config": config, "store": store, "writer": writer, "awaiting": Awaiting()},
            ),
            ChildSpec(skills, SkillLibrary, kwargs={"store": store}),
            *([knowledge] if knowledge is not None else []),
            *([cognition] if cognition is not None else []),
            ChildSpec(
                members_address,
                Supervisor,
                kwargs={"spec": members_spec, "board": StatisticsBoard(members_spec)},
                start_timeout=30.0,
                shutdown_timeout=30.0,
            ),
        ],
        strategy="one_for_one",
        intensity=10,
        period=10.0,
    )
    wiring.spec = root
    wiring.addresses.update(
        {
            "writer": writer, "substrate": substrate, "embedder": embedder, "replication": replication,
            "coordinator": coordinator, "skills": skills, "members": members_address,
        }
    )
    if knowledge is not None:
        wiring.knowledge = knowledge.address
        wiring.addresses["knowledge"] = knowledge.address
    if cognition is not None:
        wiring.addresses["cognition"] = cognition.address
    return wiring


def _cognition_spec(home: Path, config: Config) -> ChildSpec:
    """The bridged Cognition service's process, when the runtime supervises it: a service that keeps dying is
    started again ever more slowly (1 s to 30 s), never in a tight loop."""
    settings = config.cognition
    return ChildSpec(
        Address("cognition", default_timeout=DEFAULT_TIMEOUT),
        CognitionService,
        kwargs={
            "home": home, "command": settings.command, "environment": settings.environment,
            "url": settings.url, "token": read_token(home, settings),
        },
        backoff=Backoff(min=1.0, max=30.0, jitter=0.2, reset_after=60.0),
        # Stopping waits for the service's own graceful stop.
        shutdown_timeout=30.0,
    )


def _knowledge_spec(store: Store) -> ChildSpec:
    """The knowledge indexer: restarted with backoff; its start only opens the index (a rebuild or
    catch-up runs in the background), so the default start timeout holds for any home.

    Its module (tantivy) is loaded only for a home with knowledge on.
    """
    from resident.actors.knowledge import KnowledgeIndexer  # noqa: PLC0415 - loaded on first use, see above

    return ChildSpec(
        Address("knowledge", default_timeout=DEFAULT_TIMEOUT),
        KnowledgeIndexer,
        kwargs={"store": store},
        backoff=Backoff(min=0.05, max=5.0, jitter=0.2, reset_after=30.0),
        # Closing the index waits for its segment merges.
        shutdown_timeout=60.0,
    )
