"""How engagement narrows recall: an extra activation condition on top of what the caller asked.

A record's activation says when it may be recalled (a domain, a project; `None` is "any"). Recall
already serves a record only if its activation agrees with the caller's: a record with domain X
only when the caller asks for X or for no domain. Engagement adds one more such condition — the
record must also agree with the member's engaged domain and project — and, in the restricted
state, requires a record with no conditions at all. Either way it only ever removes records.

When the two conditions combine into a single activation (they never name two different values)
the substrate applies it directly; otherwise recall is asked for more and the member filters
what comes back (`allows`).
"""

from __future__ import annotations

from dataclasses import dataclass

from resident.messages.engagement import EngagementState
from resident.messages.memory import Activation

__all__ = ["Narrowing", "allows", "narrowing"]


@dataclass(frozen=True, slots=True)
class Narrowing:
    """The activation to recall with, and whether hits must still pass `allows` afterwards."""

    activation: Activation
    filter_hits: bool


def _agrees(wanted: str | None, value: str | None) -> bool:
    return wanted is None or value is None or value == wanted


def allows(state: EngagementState | None, activation: Activation) -> bool:
    """Whether a record with `activation` may be recalled under engagement `state`."""
    if state is None:
        return True
    if state.restricted:
        return activation.domain is None and activation.project is None
    return _agrees(state.domain, activation.domain) and _agrees(state.project, activation.project)


def _merged(asked: str | None, engaged: str | None) -> tuple[str | None, bool]:
    """The one value recall can filter by, and whether the two conflict."""
    if asked is None or engaged is None or asked == engaged:
        return (asked if asked is not None else engaged), False
    return asked, True


def narrowing(requested: Activation, state: EngagementState | None) -> Narrowing:
    """How to recall what `requested` allows and engagement `state` allows too."""
    if state is None:
        return Narrowing(requested, filter_hits=False)
    if state.restricted:
        return Narrowing(requested, filter_hits=True)
    domain, domain_conflict = _merged(requested.domain, state.domain)
    project, project_conflict = _merged(requested.project, state.project)
    activation = Activation(domain=domain, project=project)  # type: ignore[arg-type]  # both are Domain | None
    return Narrowing(activation, filter_hits=domain_conflict or project_conflict)
