"""HTTP plumbing shared by the loopback servers (Realm, and the runtime's API): request guards,
typed error answers, and serving on a socket with a ready hook, graceful signals and a read deadline."""

from resident.web.guard import (
    BEARER_CHALLENGE,
    READ_TIMEOUT,
    Refusal,
    decode_json,
    error_response,
    host_header_name,
    json_response,
    read_json_body,
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
    "require_loopback_host",
    "routing_error_handler",
    "stop_on_signals",
    "strict_http",
    "unexpected_error_handler",
]
