"""`resident engage`, `resident engagement show`, `resident questions`, `resident answer`."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import runtime_for
from resident.errors import InvalidInput
from resident.messages.engagement import EngagementState
from resident.messages.engagement_calls import (
    AnswerQuestion,
    EngagementQuery,
    EngageRequest,
    QuestionsQuery,
    ReleaseRequest,
)
from resident.operations import engagement as ops

__all__ = ["COMMANDS"]

DOMAIN = click.Choice(["work", "personal"])


def _describe(state: EngagementState | None) -> str:
    if state is None:
        return "not decided yet (recall is not narrowed)"
    if state.restricted:
        return (f"restricted: only memories without activation conditions (the judge was not sure; "
                f"question {state.question})")
    parts = [f"domain {state.domain or 'any'}", f"project {state.project or 'any'}"]
    if state.counterpart:
        parts.append(f"counterpart {state.counterpart}")
    if state.activity:
        parts.append(f"activity {state.activity}")
    held = ", held" if state.held else ""
    return f"{', '.join(parts)} (by {state.source}{held})"


@click.command()
@click.argument("member", type=UTF8, required=False)
@click.option("--domain", type=DOMAIN, help="work or personal.")
@click.option("--project", type=UTF8, help="The project it is engaged in.")
@click.option("--counterpart", type=UTF8, help="Whom it is talking with.")
@click.option("--activity", type=UTF8, help="What it is doing (free text).")
@click.option("--auto", "release", is_flag=True, help="Release the explicit switch: rules and the judge decide again.")
@json_option
@pass_state
def engage(
    state: CliState, member: str | None, domain: str | None, project: str | None, counterpart: str | None,
    activity: str | None, release: bool, as_json: bool,
) -> None:
    """Switch MEMBER's engagement explicitly (a member session: its own, without MEMBER).

    An explicit switch wins over entry rules and the judge until the next switch or --auto.
    Engagement only narrows which memories are recalled, never widens it.
    """
    if release and any(v is not None for v in (domain, project, counterpart, activity)):
        raise InvalidInput("--auto releases the switch; give it alone")
    if not release and all(v is None for v in (domain, project, counterpart, activity)):
        raise InvalidInput("say what to switch to: --domain, --project, --counterpart or --activity (or --auto)")
    with runtime_for(state) as runtime:
        if release:
            result = runtime.run(ops.RELEASE, ReleaseRequest(member))
        else:
            switch = EngageRequest(
                member, domain=domain, project=project, counterpart=counterpart,  # type: ignore[arg-type]
                activity=activity,
            )
            result = runtime.run(ops.ENGAGE, switch)
    if as_json:
        emit_json(result)
    else:
        stdout.print(f"{result.member}: {_describe(result)}")


@click.group()
def engagement() -> None:
    """A member's engagement: domain, project, counterpart, activity, and how it was decided."""


@engagement.command()
@click.argument("member", type=UTF8, required=False)
@json_option
@pass_state
def show(state: CliState, member: str | None, as_json: bool) -> None:
    """MEMBER's engagement state (a member session: its own)."""
    with runtime_for(state) as runtime:
        shown = runtime.run(ops.STATE, EngagementQuery(member))
    if as_json:
        emit_json({"member": shown.member, "state": shown.state})
    else:
        stdout.print(f"{shown.member}: {_describe(shown.state)}")


@click.command()
@click.option("--all", "include_answered", is_flag=True, help="Also the questions already answered.")
@json_option
@pass_state
def questions(state: CliState, include_answered: bool, as_json: bool) -> None:
    """The owner's open questions: sessions whose engagement the judge could not decide."""
    with runtime_for(state) as runtime:
        found = runtime.run(ops.QUESTIONS, QuestionsQuery(include_answered=include_answered)).questions
    if as_json:
        emit_json({"questions": found})
        return
    if not found:
        stdout.print("no open questions")
        return
    print_table(
        ("id", "member", "asked", "task", "where", "judge said"),
        (
            (
                q.id, q.member, datetime.fromtimestamp(q.asked_at, tz=UTC).strftime("%Y-%m-%d %H:%M"), q.context.task,
                " ".join(part for part in (q.context.directory, q.context.harness) if part) or "-",
                "-" if q.decision is None else f"{q.decision.domain or '?'}/{q.decision.project or '?'} "
                f"({q.decision.confidence:.2f})",
            )
            for q in found
        ),
        ids=("id",),
    )


@click.command()
@click.argument("question_id", metavar="ID", type=UTF8)
@click.option("--domain", type=DOMAIN, help="work or personal.")
@click.option("--project", type=UTF8, help="The project.")
@json_option
@pass_state
def answer(state: CliState, question_id: str, domain: str | None, project: str | None, as_json: bool) -> None:
    """Answer question ID: the member's engagement becomes this, and its judge learns from it."""
    with runtime_for(state) as runtime:
        reply = AnswerQuestion(question_id, domain=domain, project=project)  # type: ignore[arg-type]  # a DOMAIN choice
        result = runtime.run(ops.ANSWER, reply)
    if as_json:
        emit_json(result)
    else:
        stdout.print(f"{result.member}: {_describe(result)}")


COMMANDS = (engage, engagement, questions, answer)
