"""`resident knowledge …`: knowledge banks, ingest and search, repositories, verified entries, context.

Everything here needs `[knowledge] enabled = true` in the home's resident.toml. Text that came
from files (paths, titles, snippets) is printed with control characters escaped, so a hostile file
name or page cannot rewrite the terminal; `--json` output carries it as JSON strings. Every command
runs its operations through `runtime_for` (the runtime up for the home, or one opened here); the
files it names are sent as absolute paths, which the runtime reads (it runs as the same user).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import msgspec

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import runtime_for
from resident.knowledge.banks import DEFAULT_OWNER, format_owner
from resident.messages.knowledge import (
    DEFAULT_CONTEXT_K,
    ENTRY_STATES,
    MAX_CONTEXT_K,
    MAX_SEARCH_K,
    IngestReport,
    KnowledgeEntry,
)
from resident.messages.knowledge_calls import (
    BanksQuery,
    ContextQuery,
    CreateKnowledgeBank,
    EntriesQuery,
    ImportLegacy,
    Ingest,
    PageQuery,
    Promote,
    RegisterRepository,
    Reindex,
    RepositoriesQuery,
)
from resident.operations import knowledge as ops
from resident.runtime.knowledge.banks import INGEST_PROGRESS
from resident.terminal import printable

__all__ = ["COMMANDS"]

# Ingests of at least this many files show a progress bar (on stderr, when it is a terminal).
PROGRESS_FILES = 20


@click.group(short_help="Knowledge banks and pages, verified entries, context (needs [knowledge] enabled).")
def knowledge() -> None:
    """Knowledge banks of pages (ingest, search) and verified knowledge (entries, context).

    Off unless the home's resident.toml says `[knowledge] enabled = true`.
    """


# -- banks ---------------------------------------------------------------------------------------


@knowledge.group()
def banks() -> None:
    """Create and list knowledge banks."""


@banks.command(name="create")
@click.argument("name", type=UTF8)
@click.option("--owner", type=UTF8, default=DEFAULT_OWNER, show_default=True, metavar="member:M|app:A|workspace:W",
              help="Who owns the bank (and alone may read or ingest into it).")
@json_option
@pass_state
def banks_create(state: CliState, name: str, owner: str, as_json: bool) -> None:
    """Create knowledge bank NAME (creating it again for the same owner changes nothing)."""
    with runtime_for(state) as runtime:
        bank = runtime.run(ops.BANK_CREATE, CreateKnowledgeBank(name, owner))
    if as_json:
        emit_json(bank)
    else:
        stdout.print(f"knowledge bank {bank.name} ({format_owner(bank)})")


@banks.command(name="list")
@json_option
@pass_state
def banks_list(state: CliState, as_json: bool) -> None:
    """List the knowledge banks and their owners."""
    with runtime_for(state) as runtime:
        found = runtime.run(ops.BANKS, BanksQuery()).banks
    if as_json:
        emit_json(found)
    else:
        print_table(["bank", "owner"], [[bank.name, format_owner(bank)] for bank in found], ids=("bank",))


# -- pages ---------------------------------------------------------------------------------------


def _absolute(path: Path) -> Path:
    """`path` as the runtime reads it: absolute, from this command's working folder and user."""
    return path.expanduser().absolute()


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr, only where someone watches it (a terminal, and not --json): its update."""
    from rich.console import Console  # noqa: PLC0415 - only an ingest shows one
    from rich.progress import (  # noqa: PLC0415 - loaded only when this runs
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield None
        return
    columns = (TextColumn("ingesting"), BarColumn(), MofNCompleteColumn(), TextColumn("files"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("ingest", total=None)

        def update(done: int, total: int) -> None:
            if total >= PROGRESS_FILES:
                bar.update(task, completed=done, total=total)

        yield update


@knowledge.command()
@click.argument("bank", type=UTF8)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="PATH...")
@json_option
@pass_state
def ingest(state: CliState, bank: str, paths: tuple[Path, ...], as_json: bool) -> None:
    """Ingest each PATH... (Markdown and plain text files, or folders of them) into BANK.

    Each file is split into pages (Markdown by headings) and each page passes the ingest gate
    (size, title, kind, no control characters, one copy of a text per bank). Files unchanged since
    their last ingest admit nothing; a changed file supersedes its old pages. Prints what was
    admitted, skipped and rejected (with reasons); --json prints the same as one object.

    A progress bar shows (on a terminal, for 20 files or more) when the ingest runs in this
    process; while `resident up` runs for the home, it ingests and the command waits without one.
    """
    body = Ingest(bank, tuple(_absolute(path) for path in paths))
    with runtime_for(state) as runtime, _progress_bar(not as_json) as progress:
        reporting = INGEST_PROGRESS.set(progress)
        try:
            # A long ingest may take as long as the runtime's own asks of the indexer allow.
            report = runtime.run(ops.INGEST, body)
        finally:
            INGEST_PROGRESS.reset(reporting)
    if as_json:
        emit_json(report)
    else:
        _print_report(report)


def _print_report(report: IngestReport) -> None:
    stdout.print(
        f"{report.bank}: {report.admitted} pages admitted, {report.superseded} superseded, "
        f"{len(report.skipped)} skipped, {len(report.rejected)} rejected ({report.files} files)"
    )
    for skip in report.skipped:
        where = printable(skip.path) + (f" § {printable(skip.title)}" if skip.title else "")
        stdout.print(f"skipped   {where}: {printable(skip.reason)}")
    for rejection in report.rejected:
        where = printable(rejection.path) + (f" § {printable(rejection.title)}" if rejection.title else "")
        stdout.print(f"rejected  {where}: {printable(rejection.reason)}")


def _page_query(bank: str, query: str, k: int, page_state: str) -> PageQuery:
    # The struct checks the state as the server would (`--state` offers the same words).
    return msgspec.convert({"bank": bank, "query": query, "k": k, "state": page_state}, PageQuery)


@knowledge.command()
@click.argument("bank", type=UTF8)
@click.argument("query", type=UTF8)
@click.option("-k", "k", type=click.IntRange(1, MAX_SEARCH_K), default=10, show_default=True,
              help=f"How many pages (at most {MAX_SEARCH_K}).")
@click.option("--state", "page_state", type=click.Choice(["active", "superseded", "all"]), default="active",
              show_default=True, help="Search current pages, superseded ones, or both.")
@json_option
@pass_state
def search(state: CliState, bank: str, query: str, k: int, page_state: str, as_json: bool) -> None:
    """Search BANK for QUERY (BM25; Chinese, Spanish and English alike): title, source, score, snippet."""
    with runtime_for(state) as runtime:
        hits = runtime.run(ops.SEARCH, _page_query(bank, query, k, page_state)).hits
    if as_json:
        emit_json(hits)
        return
    if not hits:
        stdout.print("no pages match")
    for hit in hits:
        stdout.print(f"{hit.score:6.2f}  {printable(hit.title)}  ({printable(hit.source)})", style="bold")
        stdout.print(f"        {printable(hit.snippet)}")


@knowledge.command()
@json_option
@pass_state
def reindex(state: CliState, as_json: bool) -> None:
    """Rebuild the keyword index of every page from the store (LMDB is the truth; the index is derived)."""
    with runtime_for(state) as runtime:
        status = runtime.run(ops.REINDEX, Reindex())
    if as_json:
        emit_json(status)
    else:
        stdout.print(f"indexed {status.pages} pages in {status.rebuild_seconds:.2f} s")


# -- repositories and entries --------------------------------------------------------------------


@knowledge.group()
def repos() -> None:
    """Register the repositories verified knowledge is about, and who may read it."""


@repos.command(name="add")
@click.argument("repository", type=UTF8)
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option("--project", type=UTF8, help="The project it belongs to (default: the repository id).")
@click.option("--member", "members", type=UTF8, multiple=True, metavar="MEMBER",
              help="A member authorized for the project through it (repeat for several).")
@json_option
@pass_state
def repos_add(
    state: CliState, repository: str, path: Path, project: str | None, members: tuple[str, ...], as_json: bool
) -> None:
    """Register REPOSITORY, whose work tree is at PATH (registering again replaces it)."""
    body = RegisterRepository(repository, _absolute(path), project=project, members=members)
    with runtime_for(state) as runtime:
        registered = runtime.run(ops.REPOSITORY_ADD, body)
    if as_json:
        emit_json(registered)
    else:
        stdout.print(f"repository {registered.id} of project {registered.project} at {printable(registered.path)}")


@repos.command(name="list")
@json_option
@pass_state
def repos_list(state: CliState, as_json: bool) -> None:
    """List the registered repositories."""
    with runtime_for(state) as runtime:
        found = runtime.run(ops.REPOSITORIES, RepositoriesQuery()).repositories
    if as_json:
        emit_json(found)
    else:
        print_table(
            ["repository", "project", "members", "work tree"],
            [[r.id, r.project, ", ".join(r.members), printable(r.path)] for r in found], ids=("repository",),
        )


@knowledge.command()
@click.option("--project", type=UTF8, help="Only entries of this project.")
@click.option("--repository", type=UTF8, help="Only entries of this repository.")
@click.option("--state", "entry_state", type=click.Choice(ENTRY_STATES), help="Only entries in this state.")
@json_option
@pass_state
def entries(
    state: CliState, project: str | None, repository: str | None, entry_state: str | None, as_json: bool
) -> None:
    """List verified-knowledge entries (every state, as the home's owner sees them)."""
    query = EntriesQuery(project=project, repository=repository, state=entry_state)
    with runtime_for(state) as runtime:
        found = runtime.run(ops.ENTRIES, query).entries
    if as_json:
        emit_json(found)
    else:
        _print_entries(found)


def _print_entries(found: tuple[KnowledgeEntry, ...]) -> None:
    print_table(
        ["entry", "state", "kind", "repository", "owner", "title"],
        [[e.id, e.state, e.kind, e.repository, e.owner, printable(e.title)] for e in found], ids=("entry",),
    )


@knowledge.command()
@click.argument("entry_id", metavar="ENTRY", type=UTF8)
@json_option
@pass_state
def promote(state: CliState, entry_id: str, as_json: bool) -> None:
    """Put candidate ENTRY to the acceptance gate; it is verified only if its evidence is complete.

    The evidence is the runtime's own execution records (the accepted implementation step, a
    review and an audit of the same work); refused with every reason otherwise.
    """
    with runtime_for(state) as runtime:
        entry = runtime.run(ops.PROMOTE, Promote(entry_id))
    if as_json:
        emit_json(entry)
    else:
        stdout.print(f"{entry.id} {entry.state}")


@knowledge.command()
@click.option("--member", type=UTF8, required=True, help="The member the context is for.")
@click.option("--project", type=UTF8, required=True, help="The project the work is in.")
@click.option("--repository", type=UTF8, required=True, help="The repository the work is in.")
@click.option("-k", "k", type=click.IntRange(1, MAX_CONTEXT_K), default=DEFAULT_CONTEXT_K, show_default=True,
              help=f"At most this many entries (at most {MAX_CONTEXT_K}).")
@click.argument("query", type=UTF8, required=False)
@json_option
@pass_state
def context(
    state: CliState, member: str, project: str, repository: str, k: int, query: str | None, as_json: bool
) -> None:
    """The verified entries MEMBER may use for PROJECT and REPOSITORY, each revalidated now.

    QUERY, when given, ranks them and leaves out those it does not match.
    """
    body = ContextQuery(member, project, repository, query, k=k)
    with runtime_for(state) as runtime:
        found = runtime.run(ops.CONTEXT, body).entries
    if as_json:
        emit_json(found)
        return
    if not found:
        stdout.print("no verified knowledge to hand out")
    for entry in found:
        stdout.print(f"{entry.id}  {entry.kind}  {printable(entry.title)}", style="bold")
        stdout.print(printable(entry.body))


@knowledge.command(name="import-legacy")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@pass_state
def import_legacy(state: CliState, file: Path, as_json: bool) -> None:
    """Import older knowledge from FILE (JSON Lines or a JSON array) as legacy_unverified.

    Legacy entries are kept and listed but never treated as fact: never handed out as context,
    never promoted. The whole file is imported or none of it.
    """
    with runtime_for(state) as runtime:
        result = runtime.run(ops.IMPORT_LEGACY, ImportLegacy(_absolute(file)))
    if as_json:
        emit_json({"imported": result.imported, "skipped": result.skipped})
    else:
        stdout.print(f"{result.imported} entries imported as legacy_unverified, {result.skipped} already there")


COMMANDS = (knowledge,)
