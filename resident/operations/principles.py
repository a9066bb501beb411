"""Principles (`rt.principles`): member-level rules, proposed by members (in a session, for their own) or the owner,
decided by the owner only."""

from __future__ import annotations

from resident.messages.principles import Principle
from resident.messages.principles_calls import (
    DecidePrinciple,
    GetPrinciple,
    ListPrinciples,
    Principles,
    ProposePrinciple,
    RejectPrinciple,
)
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = ["APPROVE", "GET", "LIST", "OPERATIONS", "PROPOSE", "REJECT", "PrinciplesSurface"]

_SERVICES = "resident.runtime.principles"


def _listed(reply: Principles) -> list[Principle]:
    return list(reply.principles)


PROPOSE = declare(
    "principles.propose", "Propose a principle candidate", ProposePrinciple, Principle,
    route=Route("POST", "/v1/principles"), service=f"{_SERVICES}:propose", access=Access.MEMBER,
)
LIST = declare(
    "principles.list", "Principles, oldest first", ListPrinciples, Principles,
    route=Route("POST", "/v1/principles/list"), service=f"{_SERVICES}:list_principles", access=Access.MEMBER,
    result=_listed,
)
GET = declare(
    "principles.get", "One principle", GetPrinciple, Principle,
    route=Route("GET", "/v1/principles/{principle_id}"), service=f"{_SERVICES}:get",
)
APPROVE = declare(
    "principles.approve", "Approve a candidate", DecidePrinciple, Principle,
    route=Route("POST", "/v1/principles/{principle_id}/approve"), service=f"{_SERVICES}:approve",
)
REJECT = declare(
    "principles.reject", "Reject a candidate", RejectPrinciple, Principle,
    route=Route("POST", "/v1/principles/{principle_id}/reject"), service=f"{_SERVICES}:reject",
)

OPERATIONS = (PROPOSE, LIST, GET, APPROVE, REJECT)


class PrinciplesSurface(Surface):
    """`rt.principles`: propose, list and decide principles."""

    propose = method(PROPOSE)
    apropose = awaitable(PROPOSE)
    list = method(LIST)
    alist = awaitable(LIST)
    get = method(GET)
    aget = awaitable(GET)
    approve = method(APPROVE)
    aapprove = awaitable(APPROVE)
    reject = method(REJECT)
    areject = awaitable(REJECT)
