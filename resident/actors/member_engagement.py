"""A member's engagement, as its actor keeps it: the switch, and the narrowing of its recalls.

The state is read from the store at each recall (one short read): every switch is written by this
actor, but reading keeps no second copy to go stale. A recall whose activation and engagement
combine into one activation goes to the substrate as it is; otherwise (the restricted state, or
a caller asking for a domain or project the engagement excludes) the substrate is asked for more
hits and the member keeps only those whose record the engagement allows, asking again for more
while the allowed ones fall short of k and the substrate had more to give (up to its maximum).
Either way a recall under engagement returns a subset of what it would return without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from resident.clock import Clock
from resident.engagement.narrowing import allows, narrowing
from resident.errors import InvalidInput
from resident.messages.engagement import (
    Engage,
    EngagementQuestionAnswered,
    EngagementQuestionAsked,
    EngagementState,
    EngagementSwitched,
    GetEngagement,
    MemberEngagement,
)
from resident.messages.memory import NoteRecalled, Principal, Recall, RecallHit
from resident.store.store import Store
from resident.store.tables import ENGAGEMENT, RECORDS
from resident.supervisor import Address, ForwardReply, Reply

__all__ = ["EngagementKeeper", "Narrowed"]

# A filtered recall asks the substrate for this many times the hits wanted (at most its maximum).
OVERFETCH = 4


@dataclass(frozen=True, slots=True)
class Narrowed:
    """The context a filtered recall's hits come back with, and what asking for more needs."""

    reply: Reply | None
    state: EngagementState
    k: int
    asked: Recall
    substrate: Address
    home: Address
    max_k: int


class EngagementKeeper:
    """Reads, switches and recall narrowing for one member."""

    def __init__(self, member: str, store: Store, clock: Clock) -> None:
        self.member = member
        self.store = store
        self.clock = clock

    def current(self, message: GetEngagement) -> MemberEngagement:
        with self.store.reader() as reader:
            row = reader.get(ENGAGEMENT, self.member) or MemberEngagement(member=self.member)
        return row if message.with_examples else MemberEngagement(member=self.member, state=row.state)

    def engage(self, message: Engage) -> tuple[tuple[Any, ...], Any]:
        if message.state.member != self.member:
            raise InvalidInput(f"an engagement of {message.state.member} cannot be switched through {self.member}")
        at = self.clock.time()
        events: list[Any] = []
        if message.question is not None:
            events.append(EngagementQuestionAsked(at=at, question=message.question))
        if message.answers:
            events.append(EngagementQuestionAnswered(
                at=at, id=message.answers, by=message.by, domain=message.state.domain, project=message.state.project
            ))
        events.append(EngagementSwitched(at=at, state=message.state, example=message.example))
        return tuple(events), message.state

    def recall(
        self, message: Recall, principal: Principal, substrate: Address, reply: Reply | None, *, home: Address,
        max_k: int,
    ) -> None:
        """Send `message` to the substrate narrowed by the member's engagement."""
        with self.store.reader() as reader:
            row = reader.get(ENGAGEMENT, self.member)
        state = row.state if row is not None else None
        plan = narrowing(message.activation, state)
        recall = Recall(
            query=message.query, k=message.k, char_budget=message.char_budget, activation=plan.activation,
            include_inactive=message.include_inactive, principal=principal,
        )
        if not plan.filter_hits or state is None:
            substrate.tell(recall, reply)
            return
        # The substrate counts no use of these hits: the member reports the ones it keeps.
        wider = msgspec.structs.replace(recall, k=min(max_k, recall.k * OVERFETCH), count_usage=False)
        substrate.tell(wider, ForwardReply(home, Narrowed(reply, state, message.k, wider, substrate, home, max_k)))

    def narrowed(self, context: Narrowed, hits: Any, error: BaseException | None) -> None:
        """Keep the hits the engagement allows (reading each record's activation), and answer."""
        if context.reply is None:
            return
        if error is not None:
            context.reply.fail(error)
            return
        kept: list[RecallHit] = []
        with self.store.reader() as reader:
            for hit in hits:
                record = reader.get(RECORDS, hit.id)
                if record is not None and allows(context.state, record.activation):
                    kept.append(hit)
                    if len(kept) == context.k:
                        break
        asked = context.asked
        if len(kept) < context.k and len(hits) >= asked.k and asked.k < context.max_k:
            # The substrate filled the page it was asked for, so more may be allowed further down.
            wider = msgspec.structs.replace(asked, k=min(context.max_k, asked.k * OVERFETCH))
            again = Narrowed(context.reply, context.state, context.k, wider, context.substrate, context.home,
                             context.max_k)
            context.substrate.tell(wider, ForwardReply(context.home, again))
            return
        if kept:
            context.substrate.tell(NoteRecalled(ids=tuple(hit.id for hit in kept)))
        context.reply.resolve(kept)
