"""The runtime facade: `Runtime.open(home)` and the surfaces hanging off it."""

from resident.runtime.member import Member
from resident.runtime.runtime import Runtime

__all__ = ["Member", "Runtime"]
