"""Which of the service's banks a recall may ask, after the runtime's own rules (fail-closed).

The bridged service's memories carry none of the runtime's conditions (activation, scope, replication state),
so the runtime cannot filter them after the fact; it decides *before* asking:

* a member's recall reaches the banks that stand for the member or one of its worlds;
* under a grant, the member's own bank only if the grant covers `AGENT_CORE`, a world's bank only if it covers
  `WORLD_SHARED` (a grant narrows, never widens);
* a bank's memories carry the activation its `[[cognition.banks]]` gives it (`domain`, `project`; none by
  default), and the member's engagement narrows them exactly as it narrows a record with that activation
  (`resident.engagement.narrowing.allows`): a bank the narrowing rules out is not asked.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from resident.cognition.settings import BankBinding, CognitionSettings
from resident.engagement.narrowing import allows
from resident.messages.engagement import EngagementState
from resident.messages.memory import Activation

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
    mapped = settings.banks_for(member, worlds)
    if not mapped:
        return Reach(banks=(), reason=f"no [[cognition.banks]] stands for {member} or its worlds")
    granted = tuple(
        binding for binding in mapped
        if scopes is None or ("AGENT_CORE" if binding.member is not None else "WORLD_SHARED") in scopes
    )
    if not granted:
        return Reach(banks=(), reason="the grant covers none of the scopes of the banks that stand for " + member)
    banks = tuple(
        binding for binding in granted
        if allows(engagement, Activation(domain=binding.domain, project=binding.project))
    )
    if not banks:
        return Reach(banks=(), reason=f"{member}'s engagement narrows recall to none of its banks of the service")
    return Reach(banks=banks)
