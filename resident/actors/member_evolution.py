"""What a member actor holds besides its memory front door: its skill set and its engagement.

The member actor hands every `MemberCommand` here. Reads (the set, the engagement) are answered at
once; the projection choice is passed on to the skill library with the caller's reply; every
change is planned and written one at a time (`SerialWrites`). When the actor starts, it settles
whatever sessions ended while it was not running.
"""

from __future__ import annotations

from typing import Any

from resident.actors.member_engagement import EngagementKeeper, Narrowed
from resident.actors.member_skills import SkillSet
from resident.actors.serial_writes import Plan, SerialWrites
from resident.messages.engagement import Engage, GetEngagement
from resident.messages.evolution import MemberCommand
from resident.messages.memory import Principal, Recall
from resident.messages.skills import (
    ChooseSkills,
    DeclareNatives,
    GetSkillSet,
    GiveSkill,
    ReadSkill,
    ReclaimSkill,
    RollBackSkillChange,
    SettleSessions,
)
from resident.store.store import Store
from resident.supervisor import Address, Completed, SupervisedActor

__all__ = ["MemberEvolution"]


class MemberEvolution:
    """The skill set and engagement of the member whose actor owns this."""

    def __init__(self, owner: SupervisedActor, member: str, store: Store, writer: Address, library: Address) -> None:
        self._owner = owner
        self._library = library
        self.skills = SkillSet(member, store, owner.clock)
        self.engagement = EngagementKeeper(member, store, owner.clock)
        self._writes = SerialWrites(f"member {member}", writer, owner.context.address)

    def start(self) -> None:
        """Settle the sessions that ended while no incarnation of the actor was running."""
        self._writes.submit("settling ended sessions", lambda: self.skills.settle(SettleSessions()), None)

    def crashed(self) -> None:
        self._writes.abandon()

    def handle(self, message: MemberCommand) -> Any:
        match message:
            case GetSkillSet():
                return self.skills.view(message)
            case GetEngagement():
                return self.engagement.current(message)
            case ChooseSkills():
                self._library.tell(self.skills.ranking(message), self._owner.defer())
            case GiveSkill():
                self._write(f"giving {message.skill}", lambda: self.skills.give(message))
            case ReclaimSkill():
                self._write(f"reclaiming {message.skill}", lambda: self.skills.reclaim(message))
            case DeclareNatives():
                self._write("declaring native skills", lambda: self.skills.declare_natives(message))
            case ReadSkill():
                self._write(f"reading {message.skill}", lambda: self.skills.read(message))
            case SettleSessions():
                self._write("settling sessions", lambda: self.skills.settle(message))
            case RollBackSkillChange():
                self._write(f"rolling back {message.change}", lambda: self.skills.roll_back(message))
            case Engage():
                self._write("switching engagement", lambda: self.engagement.engage(message))
            case _:
                raise TypeError(f"no handler for {type(message).__name__}")
        return None

    def recall(self, message: Recall, principal: Principal, substrate: Address, max_k: int) -> None:
        self.engagement.recall(
            message, principal, substrate, self._owner.defer(), home=self._owner.context.address, max_k=max_k
        )

    def completed(self, message: Completed) -> None:
        """Outcomes of this member's commits and filtered recalls."""
        for context, value, error in message.outcomes:
            if isinstance(context, Narrowed):
                self.engagement.narrowed(context, value, error)
            elif self._writes.owns(context):
                self._writes.completed(context, error)

    def _write(self, what: str, plan: Plan) -> None:
        self._writes.submit(what, plan, self._owner.defer())
