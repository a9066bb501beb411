"""Which hosts count as this machine: 127.0.0.0/8, ::1 and `localhost` (one rule for every surface)."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """Whether `host` (a name or address, IPv6 with or without brackets) names only this machine."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower() == "localhost":
        return True
    if "%" in host:  # an IPv6 zone id names an interface, not a loopback address
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if address.version == 4:
        return address.is_loopback
    # Only ::1 itself: newer Pythons also call ::ffff:127.0.0.1 loopback, and the rule must not drift.
    return address == ipaddress.IPv6Address("::1")
