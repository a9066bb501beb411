"""`resident principles …`: candidates proposed by members or the runtime, decided by the owner only."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import runtime_for
from resident.messages.principles import Principle
from resident.messages.principles_calls import DecidePrinciple, ListPrinciples, ProposePrinciple, RejectPrinciple
from resident.operations import principles as ops

__all__ = ["COMMANDS"]


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _done(principle: Principle, as_json: bool) -> None:
    if as_json:
        emit_json(principle)
    else:
        stdout.print(f"principle {principle.id} of {principle.member}: {principle.state}")


@click.group()
def principles() -> None:
    """Member-level rules. A new principle is a candidate until the owner approves it; nothing
    promotes one automatically. Members propose for themselves; an owner's correction proposes
    its note to the corrected member.
    """


@principles.command()
@click.argument("text", type=UTF8)
@click.option("--basis", type=UTF8, required=True, help="Why: the work, failure or correction it comes from.")
@click.option("--member", type=UTF8, metavar="MEMBER", help="Whom it is for (a member session: itself).")
@json_option
@pass_state
def propose(state: CliState, text: str, basis: str, member: str | None, as_json: bool) -> None:
    """Propose TEXT as a principle candidate, with its --basis."""
    with runtime_for(state) as runtime:
        principle = runtime.run(ops.PROPOSE, ProposePrinciple(member, text, basis=basis))
    _done(principle, as_json)


@principles.command(name="list")
@click.option("--member", type=UTF8, metavar="MEMBER", help="Only MEMBER's (a member session: only its own).")
@click.option("--state", "wanted", type=click.Choice(["candidate", "approved", "rejected"]), help="Only in this state.")
@json_option
@pass_state
def list_command(state: CliState, member: str | None, wanted: str | None, as_json: bool) -> None:
    """Principles, oldest first, with their state."""
    with runtime_for(state) as runtime:
        query = ListPrinciples(member=member, state=wanted)  # type: ignore[arg-type]  # a --state choice
        found = runtime.run(ops.LIST, query).principles
    if as_json:
        emit_json({"principles": found})
        return
    print_table(
        ("id", "member", "state", "proposed", "by", "text", "basis"),
        ((p.id, p.member, p.state, _when(p.proposed_at), p.proposed_by, p.text, p.basis) for p in found),
        ids=("id",), title=f"{len(found)} principles",
    )


@principles.command()
@click.argument("principle_id", metavar="ID", type=UTF8)
@click.option("--reason", type=UTF8, default="", help="Why (kept with the decision).")
@json_option
@pass_state
def approve(state: CliState, principle_id: str, reason: str, as_json: bool) -> None:
    """Approve candidate ID (the owner only): it becomes one of its member's principles."""
    with runtime_for(state) as runtime:
        principle = runtime.run(ops.APPROVE, DecidePrinciple(principle_id, reason=reason))
    _done(principle, as_json)


@principles.command()
@click.argument("principle_id", metavar="ID", type=UTF8)
@click.option("--reason", type=UTF8, required=True, help="Why it is rejected.")
@json_option
@pass_state
def reject(state: CliState, principle_id: str, reason: str, as_json: bool) -> None:
    """Reject candidate ID (the owner only), saying why."""
    with runtime_for(state) as runtime:
        principle = runtime.run(ops.REJECT, RejectPrinciple(principle_id, reason=reason))
    _done(principle, as_json)


COMMANDS = (principles,)
