"""resident: a local, supervised actor runtime that keeps AI team members alive across sessions.

    from resident import Runtime

    with Runtime.open() as rt:
        rt.memory.enable()
        rt.member("deven").remember("the staging deploy needs the migration first")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resident.errors import ResidentError

if TYPE_CHECKING:
    from resident.facade import Runtime
    from resident.operations.memory import MemberSurface as Member

__all__ = ["Member", "ResidentError", "Runtime"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The runtime pulls in every actor; `python -m resident.realm.server` and other light entry
    # points must not pay for (or depend on) that import.
    if name == "Runtime":
        from resident.facade import Runtime  # noqa: PLC0415 - loaded on first use, see above

        return Runtime
    if name == "Member":
        from resident.operations.memory import MemberSurface  # noqa: PLC0415 - loaded on first use, see above

        return MemberSurface
    raise AttributeError(f"module 'resident' has no attribute {name!r}")
