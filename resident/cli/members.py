"""`resident member export | import`: a member's portable memory between homes."""

from __future__ import annotations

from pathlib import Path

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, stdout
from resident.cli.target import runtime_for
from resident.messages.portability_calls import ExportQuery, ImportMember
from resident.operations import portability as ops

__all__ = ["COMMANDS"]


@click.group()
def member() -> None:
    """Move a member's own memory (AGENT_CORE, AGENT_DYADIC) between homes.

    \b
    resident --home A member export deven deven.json
    resident --home B member import deven.json
    """


@member.command(name="export")
@click.argument("name", metavar="MEMBER", type=UTF8)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@pass_state
def export_command(state: CliState, name: str, file: Path, as_json: bool) -> None:
    """Write MEMBER's portable memory to FILE.

    FILE (written atomically, private) holds MEMBER's AGENT_CORE and AGENT_DYADIC records in a
    versioned format; WORLD_SHARED records and records Realm withheld are never exported.
    """
    # The file is written here, on this side of the API, whichever process holds the runtime.
    from resident.memory.portability import write_export_file  # noqa: PLC0415 - loaded only when this runs

    with runtime_for(state, create=False) as runtime:
        document = runtime.run(ops.EXPORT, ExportQuery(name))
    write_export_file(file, document)
    count = len(document.records)
    if as_json:
        emit_json({"member": name, "file": str(file), "records": count})
    else:
        stdout.print(f"exported {count} records of {name} to {file}")


@member.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--world", type=UTF8, metavar="NAME", help="World a member new to this home joins (default: team).")
@json_option
@pass_state
def import_command(state: CliState, file: Path, world: str | None, as_json: bool) -> None:
    """Load a member export (from `resident member export`) into this home.

    Records already here are skipped, so importing twice is harmless; imported records start
    over as `pending` for this home's Realm. A member not on this home's roster joins it. Memory
    must be on here (`resident memory enable`); a malformed or truncated FILE is refused whole.
    """
    from resident.memory.portability import read_export_file  # noqa: PLC0415 - loaded only when this runs

    with runtime_for(state) as runtime:
        request = ImportMember(read_export_file(file), source=str(file), world=world)
        result = runtime.run(ops.IMPORT, request)
    # Sessions are mentioned only when the export carried some: older exports read as they always did.
    sessions = {"sessions": result.sessions} if result.sessions else {}
    if as_json:
        emit_json(
            {"member": result.member, "imported": result.imported, "skipped": result.skipped, "joined": result.joined,
             **sessions}
        )
    else:
        joined = " (joined this home)" if result.joined else ""
        carried = f" and {result.sessions} sessions" if result.sessions else ""
        stdout.print(
            f"imported {result.imported} records{carried} of {result.member}{joined}; {result.skipped} already here"
        )


COMMANDS = (member,)
