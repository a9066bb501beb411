"""Which of the service's banks a recall may ask, after the runtime's own rules (fail-closed).

The bridged service's memories carry none of the runtime's conditions (activation, scope, replication state),
so the runtime cannot filter them after the fact; it decides *before* asking:

* a member's recall reaches the banks that stand for the member or one of its worlds;
* under a grant, the member's own bank only if the grant covers `AGENT_CORE`, a world's bank only if it covers
  `WORLD_SHARED` (a grant narrows, never widens);
* while the member's engagement narrows recall (restricted, or engaged in a domain or project) the bridge is not
  asked at all: nothing it answers could be checked against that narrowing.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from resident.cognition.settings import BankBinding, CognitionSettings
from resident.messages.engagement import EngagementState

__all__ = ["Reach", "reach"]


@dataclass(frozen=True, slots=True)
class Reach:
    """The banks a recall may ask, or why it may ask none."""

    banks: tuple[BankBinding, ...]
    reason: str = ""


def reach(
    settings: CognitionSettings, member: str, worlds: tuple[str, ...], engagement: EngagementState | None,
    scopes: Collection[str] | None,
) -> Reach:
    """The banks `member`'s recall may ask (`scopes`: its grant's, None for the owner's call)."""
    if not settings.bridged:
        return Reach(banks=(), reason="no bridge is configured ([cognition] provider)")
    if engagement is not None and (engagement.restricted or engagement.domain or engagement.project):
        return Reach(banks=(), reason=f"{member}'s engagement narrows recall; the bridged service is not asked")
    banks = tuple(
        binding for binding in settings.banks_for(member, worlds)
        if scopes is None or ("AGENT_CORE" if binding.member is not None else "WORLD_SHARED") in scopes
    )
    if not banks:
        return Reach(banks=(), reason=f"no [[cognition.banks]] stands for {member} or its worlds (within its grant)")
    return Reach(banks=banks)
