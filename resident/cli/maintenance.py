"""`resident doctor | salvage`: check a closed home whole, and rescue what a damaged one still holds.

Both exit 0 when all is well and `EXIT_DAMAGED` (3) when they completed but found damage (doctor)
or could not save everything (salvage); the report says what. A failure to run at all (the home
in use, a destination that is not empty) is an error as everywhere: one line, exit 1.
"""

from __future__ import annotations

from pathlib import Path

import click

from resident.cli.common import CliState, emit_json, json_option, pass_state, stdout
from resident.cli.target import require_closed
from resident.messages.store import DoctorReport, SalvageReport

__all__ = ["COMMANDS", "EXIT_DAMAGED"]

EXIT_DAMAGED = 3
# Findings listed per check in text output (all of them, up to the report's limit, with --json).
_SHOWN = 20


@click.command()
@json_option
@pass_state
@click.pass_context
def doctor(ctx: click.Context, state: CliState, as_json: bool) -> None:
    """Check the home whole: configuration, every page, every table, the event log, every record.

    The event log must rebuild exactly the live state, and every memory record's content must
    match its digest. The home must not be open elsewhere (`resident down` stops a runtime that is
    up); nothing in it is written. Exits 0 when
    the home is sound and 3 when something is damaged (the report names it; `resident salvage DEST`
    copies out what still reads).
    """
    from resident.runtime import Runtime  # noqa: PLC0415 - loaded only when this runs

    report = Runtime.doctor(require_closed(state.home))
    if as_json:
        emit_json(report)
    else:
        _print_doctor(report)
    if not report.sound:
        ctx.exit(EXIT_DAMAGED)


def _shown(text: str) -> str:
    """`text` with every unprintable character escaped: reports quote keys and ids from a damaged file."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _print_doctor(report: DoctorReport) -> None:
    stdout.print(f"home       {report.home}")
    stdout.print(f"data file  {report.data_file}")
    for finding in report.findings:
        if finding.skipped:
            stdout.print(f"skipped  {finding.check}: {finding.skipped}")
            continue
        verdict = "ok     " if finding.sound else "DAMAGED"
        stdout.print(f"{verdict}  {finding.check} ({finding.checked} checked, {finding.problem_count} problems)")
        for problem in finding.problems[:_SHOWN]:
            stdout.print(f"           {_shown(problem)}")
        if finding.problem_count > _SHOWN:
            stdout.print(f"           … and {finding.problem_count - _SHOWN} more (see --json)")
    stdout.print("the home is sound" if report.sound else "the home is damaged: see above")


@click.command()
@click.argument("dest", type=click.Path(path_type=Path))
@json_option
@pass_state
@click.pass_context
def salvage(ctx: click.Context, state: CliState, dest: Path, as_json: bool) -> None:
    """Copy every record that still reads and verifies out of a damaged home into a new home at DEST.

    DEST must not exist or be an empty directory. Banks, members, grants, executions and the
    configuration come along when they read; records keep their replication state (a withheld
    record stays withheld). The damaged home is only read. Exits 0 when everything was saved and
    3 when something could not be (the report lists it).
    """
    from resident.runtime import Runtime  # noqa: PLC0415 - loaded only when this runs

    report = Runtime.salvage(dest, require_closed(state.home))
    if as_json:
        emit_json(report)
    else:
        _print_salvage(report)
    if not report.complete:
        ctx.exit(EXIT_DAMAGED)


def _print_salvage(report: SalvageReport) -> None:
    saved = ", ".join(f"{count} {kind}" for kind, count in report.saved.items())
    stdout.print(f"salvaged {report.source} into {report.dest}: {saved}")
    for note in report.damage:
        stdout.print(f"damage   {_shown(note)}")
    for note in report.lost:
        stdout.print(f"lost     {_shown(note)}")
    if report.complete:
        stdout.print("everything was saved")
    else:
        stdout.print(f"not everything could be saved (see above); the new home is {report.dest}")


COMMANDS = (doctor, salvage)
