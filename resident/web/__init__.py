"""HTTP plumbing shared by the loopback servers (Realm, and the runtime's API): request guards,
typed error answers, and serving on a socket with a ready hook, graceful signals and a read deadline.

The names are loaded on first use: `decoding` (reading a body into its struct) needs neither
starlette nor uvicorn, and the `resident` command uses it in-process.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resident.web.decoding import Refusal, decode_json
    from resident.web.guard import (
        BEARER_CHALLENGE,
        READ_TIMEOUT,
        error_response,
        host_header_name,
        json_response,
        read_json_body,
        refused,
        require_loopback_host,
        routing_error_handler,
        unexpected_error_handler,
    )
    from resident.web.serving import ReadyServer, listen_tcp, stop_on_signals, strict_http

__all__ = [
    "BEARER_CHALLENGE",
    "READ_TIMEOUT",
    "ReadyServer",
    "Refusal",
    "decode_json",
    "error_response",
    "host_header_name",
    "json_response",
    "listen_tcp",
    "read_json_body",
    "refused",
    "require_loopback_host",
    "routing_error_handler",
    "stop_on_signals",
    "strict_http",
    "unexpected_error_handler",
]

_MODULES = {
    "Refusal": "decoding", "decode_json": "decoding", "ReadyServer": "serving", "listen_tcp": "serving",
    "stop_on_signals": "serving", "strict_http": "serving",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_MODULES.get(name, 'guard')}"), name)
