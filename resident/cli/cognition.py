"""`resident cognition …`: one recall over memory, knowledge and the bridged service; a work item's context; what
the cognition service (and the service it bridges to) offers."""

from __future__ import annotations

from collections.abc import Sequence

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import runtime_for
from resident.messages.bounds import MAX_RECALL_K
from resident.messages.cognition import (
    ALL_SOURCES,
    BridgeReport,
    CapabilitiesQuery,
    CognitionContextRequest,
    CognitionHit,
    CognitionRecall,
    CognitionSkipped,
)
from resident.operations import cognition as ops

__all__ = ["COMMANDS"]


@click.group(short_help="One recall over memory, knowledge and a bridged Cognition service; capabilities.")
def cognition() -> None:
    """One cognition service over a member's memory, the knowledge it may see and, where one is configured
    ([cognition] in resident.toml), an independent Cognition service it bridges to."""


def _text(hit: CognitionHit) -> tuple[str, str]:
    """A hit's id and text, from whichever source it came."""
    if hit.memory is not None:
        return hit.memory.id, hit.memory.summary
    if hit.entry is not None:
        return hit.entry.id, hit.entry.title
    if hit.page is not None:
        return hit.page.id, f"{hit.page.title}: {hit.page.snippet}"
    if hit.bridged is not None:
        return f"{hit.bridged.bank}/{hit.bridged.id}", hit.bridged.text
    return "", ""


def _print(hits: Sequence[CognitionHit], skipped: Sequence[CognitionSkipped], bridge: BridgeReport) -> None:
    print_table(
        ("score", "source", "id", "text"),
        ((f"{hit.score:.3f}", hit.source, *_text(hit)) for hit in hits), ids=("id",), title=f"{len(hits)} hits",
    )
    for skip in skipped:
        stdout.print(f"{skip.source}: not asked ({skip.reason})")
    if bridge.state == "degraded":
        stdout.print(f"bridge degraded: {bridge.reason}")


@cognition.command()
@click.argument("member", type=UTF8)
@click.argument("query", type=UTF8)
@click.option("-k", "k", type=click.IntRange(1, MAX_RECALL_K), default=10, show_default=True, help="At most K hits.")
@click.option("--source", "sources", type=click.Choice(ALL_SOURCES), multiple=True,
              help="Ask only this source (repeat for several; default: all).")
@click.option("--project", type=UTF8, help="The project of the verified entries to search.")
@click.option("--repository", type=UTF8, help="The repository of the verified entries to search.")
@json_option
@pass_state
def recall(
    state: CliState, member: str, query: str, k: int, sources: tuple[str, ...], project: str | None,
    repository: str | None, as_json: bool,
) -> None:
    """MEMBER's best hits for QUERY across memory, knowledge and the bridged service, each with its source."""
    request = CognitionRecall(
        member, query, k, sources=sources or ALL_SOURCES,  # type: ignore[arg-type]  # click's choices are sources
        project=project, repository=repository,
    )
    with runtime_for(state) as runtime:
        found = runtime.run(ops.RECALL, request)
    if as_json:
        emit_json(found)
        return
    _print(found.hits, found.skipped, found.bridge)


@cognition.command()
@click.argument("member", type=UTF8)
@click.argument("project", type=UTF8)
@click.argument("repository", type=UTF8)
@click.argument("item", type=UTF8)
@click.option("-k", "k", type=click.IntRange(1, MAX_RECALL_K), default=10, show_default=True,
              help="At most K entries and K memories.")
@json_option
@pass_state
def context(state: CliState, member: str, project: str, repository: str, item: str, k: int, as_json: bool) -> None:
    """What MEMBER needs for work ITEM in PROJECT and REPOSITORY: verified entries, then memories."""
    with runtime_for(state) as runtime:
        found = runtime.run(ops.CONTEXT, CognitionContextRequest(member, project, repository, item, k=k))
    if as_json:
        emit_json(found)
        return
    for entry in found.entries:
        stdout.print(f"entry {entry.id} ({entry.kind}): {entry.title}")
    _print(found.memories, found.skipped, found.bridge)


@cognition.command()
@json_option
@pass_state
def capabilities(state: CliState, as_json: bool) -> None:
    """The sources and whether each answers now; the bridge, its version and the operations it offers."""
    with runtime_for(state) as runtime:
        found = runtime.run(ops.CAPABILITIES, CapabilitiesQuery())
    if as_json:
        emit_json(found)
        return
    for source in found.sources:
        stdout.print(f"{source.source}: {'yes' if source.available else 'no'}" + (
            f" ({source.reason})" if source.reason and not source.available else ""))
    bridge = found.bridge
    stdout.print(f"bridge: {bridge.provider} {bridge.state}" + (f" {bridge.url} version {bridge.version}"
                                                                   if bridge.version else ""))
    if bridge.reason:
        stdout.print(f"  {bridge.reason}")
    if found.optional:
        stdout.print(f"optional operations (answered by {bridge.provider}): {', '.join(found.optional)}")


COMMANDS = (cognition,)
