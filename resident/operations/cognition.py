"""Cognition (`rt.cognition`): one recall over a member's memory, the knowledge it may see and the bridged
independent service; a work item's context; what the service offers; the bridged service's optional operations.

A member session may call each but `retain` for its own member (within its grant); the owner for any member.
Writing to the independent service (`retain`) is the owner's alone.
"""

from __future__ import annotations

from resident.messages.cognition import (
    Capabilities,
    CapabilitiesQuery,
    CognitionContext,
    CognitionContextRequest,
    CognitionHits,
    CognitionRecall,
    OfferedCall,
    OfferedReply,
    Retained,
    RetainRecords,
)
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = ["CALL", "CAPABILITIES", "CONTEXT", "OPERATIONS", "RECALL", "RETAIN", "CognitionSurface"]

_SERVICES = "resident.runtime.cognition.service"

RECALL = declare(
    "cognition.recall", "Recall across memory, knowledge and the bridged service, each hit marked with its source",
    CognitionRecall, CognitionHits, route=Route("POST", "/v1/cognition/recall"), service=f"{_SERVICES}:recall",
    access=Access.MEMBER,
)
CONTEXT = declare(
    "cognition.context", "A work item's context: verified entries, then memories about it", CognitionContextRequest,
    CognitionContext, route=Route("POST", "/v1/cognition/context"), service=f"{_SERVICES}:cognition_context",
    access=Access.MEMBER,
)
CAPABILITIES = declare(
    "cognition.capabilities", "The sources, the bridge's state, and what the bridged service offers",
    CapabilitiesQuery, Capabilities, route=Route("GET", "/v1/cognition/capabilities"),
    service=f"{_SERVICES}:capabilities", access=Access.MEMBER,
)
CALL = declare(
    "cognition.call", "An optional operation the bridged service offers, answered under its own authority",
    OfferedCall, OfferedReply, route=Route("POST", "/v1/cognition/call"), service=f"{_SERVICES}:call_offered",
    access=Access.MEMBER,
)

RETAIN = declare(
    "cognition.retain", "Write served memories of a member to its own bank of the bridged service (retain = true)",
    RetainRecords, Retained, route=Route("POST", "/v1/cognition/retain"), service=f"{_SERVICES}:retain",
)

OPERATIONS = (RECALL, CONTEXT, CAPABILITIES, CALL, RETAIN)


class CognitionSurface(Surface):
    """`rt.cognition`: one service over memory and knowledge, bridged to an independent Cognition service."""

    recall = method(RECALL)
    arecall = awaitable(RECALL)
    context = method(CONTEXT)
    acontext = awaitable(CONTEXT)
    capabilities = method(CAPABILITIES)
    acapabilities = awaitable(CAPABILITIES)
    call = method(CALL)
    acall = awaitable(CALL)
    retain = method(RETAIN)
    aretain = awaitable(RETAIN)
