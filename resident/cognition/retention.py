"""Which of the runtime's records may be written to the independent service (`rt.cognition.retain`).

Writing out is the owner's choice per bank (`retain = true` in its `[[cognition.banks]]`), and only of what the
runtime would serve, in a form the service cannot narrow again:

* only a bank that stands for the member alone, and only the member's own `AGENT_CORE` records (a dyadic or a
  world's record is not the member's alone to hand out);
* only an active record whose replication state is served (`pending` or `synced`): never one Realm withheld
  (`conflict`, `invalidated`) nor one awaiting its review (`pending_review`);
* only a record without activation conditions: the service keeps none, so it would recall the record where the
  runtime would not.
"""

from __future__ import annotations

from resident.messages.memory import MemoryRecord

__all__ = ["refusal"]

_SERVED = ("pending", "synced")


def refusal(record: MemoryRecord, member: str) -> str:
    """Why `record` may not be written to `member`'s bank of the service ("" when it may)."""
    if record.scope != "AGENT_CORE" or record.owner != member:
        return f"{record.id} is not {member}'s own AGENT_CORE memory"
    if record.lifecycle != "active":
        return f"{record.id} is {record.lifecycle}"
    if record.replication not in _SERVED:
        return f"{record.id} is withheld ({record.replication}): it is never written out"
    if record.activation.domain is not None or record.activation.project is not None:
        return f"{record.id} has activation conditions the service would not keep"
    return ""
