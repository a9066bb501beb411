"""The runtime facade: `Runtime.open(home)` and the surfaces hanging off it.

`Runtime` and `Member` (the member surface) are loaded on first use, so that the light modules of this package (who is
calling, `resident.runtime.caller`) can be imported without starting on the whole actor tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resident.operations.memory import MemberSurface as Member
    from resident.runtime.runtime import Runtime

__all__ = ["Member", "Runtime"]


def __getattr__(name: str) -> Any:
    if name == "Runtime":
        from resident.runtime.runtime import Runtime  # noqa: PLC0415 - loaded only when this runs

        return Runtime
    if name == "Member":
        from resident.operations.memory import MemberSurface  # noqa: PLC0415 - loaded on first use, see above

        return MemberSurface
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
