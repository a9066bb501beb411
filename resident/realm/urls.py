"""Realm URLs: the one rule for what a Realm address may be, and how to write one."""

from __future__ import annotations

import urllib.parse

from resident.errors import InvalidInput
from resident.loopback import is_loopback_host

__all__ = ["REALM_CA_FILE", "realm_base_url", "realm_url"]

# Where `resident init --realm-ca` copies the CA bundle a home pins for reaching Realm, inside the home.
REALM_CA_FILE = "realm-ca.pem"


def realm_url(host: str, port: int, *, tls: bool = False) -> str:
    """The URL of a Realm listening on `host:port` (an IPv6 address in brackets)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def realm_base_url(url: str) -> str:
    """`url` without a trailing slash, once it is known to be http(s)://host:port[/prefix].

    `http` is accepted only for a loopback host: a Realm on another machine is reached over https.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidInput(f"Realm URL {url!r} is malformed ({exc}); use http://host:port") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise InvalidInput(f"Realm URL {url!r} must look like http://host:port (an optional path may follow)")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise InvalidInput(f"Realm URL {url!r} must not carry a query, fragment or credentials")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise InvalidInput(
            f"Realm URL {url!r} sends tokens in the clear to another machine; use https:// for a remote Realm"
        )
    return url.rstrip("/")
