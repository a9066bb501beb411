"""What a bridged Hindsight service offers, read from its answers to `GET /v1/version` and `GET /openapi.json`,
and what the bridge makes of it (the upgrade contract).

* The bridge knows Hindsight's API of the major versions in `KNOWN_MAJORS`. For those it uses recall and retain
  and offers each optional operation of `OPTIONAL` whose endpoint the service lists.
* A version it does not know is used only through the part the bridge cannot do without, recall (when the
  service still lists it); no optional operation is offered, and the bridge's status says so.
* An operation the service stops listing goes away at the next probe.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["KNOWN_MAJORS", "OPTIONAL", "RECALL", "RETAIN", "Offer", "read_offer"]

KNOWN_MAJORS = ("1",)
RECALL = "/v1/default/banks/{bank_id}/memories/recall"
RETAIN = "/v1/default/banks/{bank_id}/memories"
# Optional operations the bridge can pass on, each with the endpoint (method, path) that answers it.
OPTIONAL: dict[str, tuple[str, str]] = {
    "reflect": ("POST", "/v1/default/banks/{bank_id}/reflect"),
    "mental_models": ("GET", "/v1/default/banks/{bank_id}/mental-models"),
}


@dataclass(frozen=True, slots=True)
class Offer:
    """The service's offer as the bridge will use it."""

    version: str
    known: bool
    endpoints: tuple[str, ...]
    recall: bool
    retain: bool
    optional: tuple[str, ...]

    def describe(self) -> str:
        if not self.known:
            return (f"version {self.version or '(none given)'} is not one the bridge knows "
                    f"({', '.join(m + '.x' for m in KNOWN_MAJORS)}): used through recall only")
        return ""


def read_offer(version: str, paths: Iterable[str]) -> Offer:
    """The offer of a service that says it is `version` and lists `paths` (its OpenAPI paths)."""
    listed = tuple(sorted(set(paths)))
    known = version.split(".", 1)[0] in KNOWN_MAJORS
    optional = tuple(name for name, (_, path) in OPTIONAL.items() if path in listed) if known else ()
    return Offer(
        version=version, known=known, endpoints=listed, recall=RECALL in listed, retain=known and RETAIN in listed,
        optional=optional,
    )
