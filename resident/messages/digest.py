"""The content digest that names one version of a memory record.

The runtime stamps it on every record it shapes, Realm recomputes it on every record it is sent,
and serving and imports recompute it to notice a record whose stored text was edited. All of them
must compute it the same way, so it lives here, beside the records it describes.
"""

from __future__ import annotations

import hashlib

import msgspec

__all__ = ["content_digest"]


def content_digest(
    *,
    record_id: str,
    summary: str,
    body: str,
    kind: str,
    bank: str,
    canonical: bool,
    delegated: bool,
    supersedes: str | None,
) -> str:
    """sha256 over the fields that make a version of a record what it is."""
    payload = msgspec.msgpack.encode([record_id, summary, body, kind, bank, canonical, delegated, supersedes])
    return hashlib.sha256(payload).hexdigest()
