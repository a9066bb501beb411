"""`resident replication status | sync` and `resident reconcile`."""

from __future__ import annotations

import time

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, stdout
from resident.cli.target import runtime_for
from resident.errors import InvalidInput
from resident.messages.home_calls import RecordReplicationQuery, ReplicationQuery, SyncRequest
from resident.messages.memory_calls import ReconcileRecord
from resident.messages.replication import RecordReplication, ReplicationCounts
from resident.operations import memory as ops
from resident.operations import replication as replication_ops

__all__ = ["COMMANDS"]


@click.group()
def replication() -> None:
    """Where memory records stand with Realm: pending, synced, conflict, invalidated.

    Records are `pending` until Realm accepts them (`synced`). Realm may reject one (`conflict`)
    or invalidate it later (`invalidated`); both are withheld from every read until settled with
    `resident reconcile ID`.
    """


def _print_counts(counts: ReplicationCounts) -> None:
    stdout.print("  ".join(f"{state} {n}" for state, n in counts.counts.items()))
    stdout.print(f"realm {counts.realm or 'none'}" + (f"  ({counts.parked} parked)" if counts.parked else ""))
    if counts.last_error:
        stdout.print(f"last error: {counts.last_error}")
    if counts.note:
        stdout.print(counts.note)
    if counts.withheld:
        shown = ", ".join(counts.withheld[:10]) + (" …" if len(counts.withheld) > 10 else "")
        stdout.print(f"withheld, awaiting `resident reconcile ID --rollback|--readmit`: {shown}")


@replication.command(name="status")
@click.argument("record_id", metavar="[ID]", required=False, type=UTF8)
@json_option
@pass_state
def status_command(state: CliState, record_id: str | None, as_json: bool) -> None:
    """Counts per replication state, or one record's state.

    Without ID: records per state, the Realm in use, and the last error. With ID: that record's
    state, the reason it is withheld (if it is), push attempts and the last error.
    """
    with runtime_for(state, create=False) as runtime:
        if record_id is None:
            result = runtime.run(replication_ops.STATUS, ReplicationQuery())
        else:
            result = runtime.run(replication_ops.RECORD, RecordReplicationQuery(record_id))
    if as_json:
        emit_json(result if isinstance(result, RecordReplication) else {**_counts_json(result)})
        return
    if isinstance(result, RecordReplication):
        stdout.print(f"{result.id} {result.state}" + (f" ({result.reason})" if result.reason else ""))
        last = f", last error: {result.last_error}" if result.last_error else ""
        stdout.print(f"attempts {result.attempts}{last}")
    else:
        _print_counts(result)


def _counts_json(counts: ReplicationCounts) -> dict[str, object]:
    return {
        "counts": counts.counts,
        "pending": counts.pending,
        "realm": counts.realm,
        "parked": counts.parked,
        "retrying": counts.retrying,
        "last_error": counts.last_error,
        "note": counts.note,
        "withheld": list(counts.withheld),
    }


@replication.command()
@click.option(
    "--timeout", type=click.FloatRange(min=0.1, max=120), default=30.0, show_default=True, help="Seconds to wait."
)
@json_option
@pass_state
def sync(state: CliState, timeout: float, as_json: bool) -> None:
    """Push pending records and poll invalidations now, and wait.

    Exits 0 once nothing is pending. Exits 1, naming the count, when records are still pending
    after --timeout (Realm down or unset; `resident replication status` says why); with --json
    the counts then carry an "error" object too.
    """
    started = time.monotonic()
    with runtime_for(state) as runtime:
        # The request waits a little longer than the sync itself, which answers at its deadline.
        counts = runtime.run(replication_ops.SYNC, SyncRequest(timeout=timeout))
    pending = counts.pending
    error = _pending_error(counts, waited=time.monotonic() - started, timeout=timeout)
    if as_json:
        failure = {"error": {"type": "ReplicationPending", "message": error}} if pending else {}
        emit_json({**_counts_json(counts), "settled": pending == 0, **failure})
    else:
        _print_counts(counts)
        if pending:
            click.echo(f"error: {error}", err=True)
    if pending:
        click.get_current_context().exit(1)


def _pending_error(counts: ReplicationCounts, *, waited: float, timeout: float) -> str:
    """Why records are still pending after a sync, without claiming a wait that did not happen."""
    records = f"{counts.pending} record{'s are' if counts.pending != 1 else ' is'}"
    if not counts.realm or counts.realm == "none":
        # Without a Realm the sync answers at once: there is nothing to wait for.
        return f"{records} pending and stay so: no Realm is configured for this home; run `resident init --realm URL`"
    if waited < timeout:
        why = counts.last_error or counts.note or "see `resident replication status`"
        return f"{records} still pending (the sync gave up after {waited:.1f} s: {why})"
    return f"{records} still pending after {timeout:g} s; `resident replication status` says why"


@click.command()
@click.argument("record_id", metavar="ID", type=UTF8)
@click.option("--rollback", is_flag=True, help="Retract the local write.")
@click.option("--readmit", is_flag=True, help="Write a corrected version that supersedes it, back to pending.")
@click.option("--text", type=UTF8, help="Corrected text for --readmit (default: the withheld text).")
@click.option("--no-canonical", is_flag=True, help="With --readmit: do not ask to be canonical.")
@json_option
@pass_state
def reconcile(
    state: CliState, record_id: str, rollback: bool, readmit: bool, text: str | None, no_canonical: bool, as_json: bool
) -> None:
    """Settle record ID, withheld as conflict or invalidated: --rollback or --readmit.

    --rollback retracts the local write; the record stays withheld. --readmit writes a corrected
    version (--text, --no-canonical) that supersedes the withheld one and starts again as
    `pending`. Nothing is settled without one of them.
    """
    if rollback == readmit:
        raise InvalidInput("choose one: --rollback (retract the local write) or --readmit (write a corrected version)")
    if rollback and (text is not None or no_canonical):
        raise InvalidInput("--text and --no-canonical go with --readmit, not --rollback")
    request = ReconcileRecord(
        record_id, rollback=rollback, readmit=readmit, text=text, canonical=False if no_canonical else None
    )
    with runtime_for(state) as runtime:
        # The owner settles any record; a member session its own, under its grant.
        result = runtime.run(ops.RECONCILE_RECORD, request)
    if as_json:
        emit_json(result)
    elif result.action == "rollback":
        stdout.print(f"{record_id} rolled back (retracted; still withheld)")
    else:
        stdout.print(f"{record_id} superseded by {result.new_id} ({result.replication})")


COMMANDS = (replication, reconcile)
