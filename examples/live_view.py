"""A small host of the runtime: a live terminal view of a home, fed by the API's event stream.

    resident --home ~/team up --detach
    python examples/live_view.py --home ~/team

It connects like any host (`resident.api.connect`, which loads neither the runtime nor numpy), shows
the coordinator's progress per member and the latest events (writes admitted, replication verdicts,
withheld records, actors crashing and restarting), and refreshes the progress table whenever a
progress event arrives. `--plain` prints one line per event instead (for logs and pipes); `--events N`
stops after N events. Text from the stream is shown with control characters escaped, so a task or a
reason cannot drive the terminal.
"""

from __future__ import annotations

import argparse
import sys
from collections import deque
from collections.abc import Iterable

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from resident.api import connect
from resident.api.wire import (
    ActorEvent,
    ApiEvent,
    MemorySwitchedEvent,
    ProgressEvent,
    RecordAdmittedEvent,
    RecordLifecycleEvent,
    RecordWithheldEvent,
    ReplicationAttemptEvent,
    ReplicationSyncedEvent,
    RuntimeStoppedEvent,
    StreamGapEvent,
)
from resident.errors import ResidentError
from resident.messages.coordination import Progress

RECENT = 12


def printable(value: str) -> str:
    """`value` with every control character escaped (`\\x1b` stays visible text, never an escape)."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in value)


def describe(event: ApiEvent) -> str:
    """One line saying what happened."""
    match event:
        case RecordAdmittedEvent():
            line = f"{event.author} wrote {event.id} ({event.kind}, {event.bank})"
        case RecordLifecycleEvent():
            line = f"{event.id} {event.lifecycle} by {event.by}"
        case ReplicationSyncedEvent():
            line = f"Realm accepted {len(event.ids)} record{'s' if len(event.ids) != 1 else ''}"
        case RecordWithheldEvent():
            line = f"{event.id} withheld ({event.state}): {event.reason}"
        case ReplicationAttemptEvent():
            line = f"push of {event.records} records " + (f"failed: {event.error}" if event.error else "answered")
        case MemorySwitchedEvent():
            line = f"memory {'on (' + event.embedder + ')' if event.enabled else 'off'}"
        case ProgressEvent():
            line = f"{event.member}: {event.task} — {event.outcome}" + (f" ({event.error})" if event.error else "")
        case ActorEvent():
            line = f"actor {event.name} {event.change} (incarnation {event.incarnation}) {event.reason}".rstrip()
        case RuntimeStoppedEvent():
            line = f"the runtime stopped: {event.reason}"
        case StreamGapEvent():
            line = "missed some actor events" if event.lost < 0 else f"missed {event.lost} actor events"
        case _:
            line = type(event).__name__
    return printable(line)


def render(progress: Progress, recent: Iterable[str]) -> Group:
    table = Table(title="progress", title_justify="left")
    for column in ("member", "running", "succeeded", "failed", "corrections", "last task"):
        table.add_column(column)
    for member in progress.members:
        table.add_row(
            member.member, str(member.running), str(member.succeeded), str(member.failed), str(member.corrections),
            Text(printable(member.last_task)),
        )
    return Group(table, Text("\n".join(recent) or "(waiting for events)"))


def run(home: str | None, *, plain: bool, limit: int | None, console: Console) -> int:
    with connect(home) as runtime:
        progress = runtime.coordinator.progress()
        recent: deque[str] = deque(maxlen=RECENT)
        stream = runtime.events()
        seen = 0
        live = None if plain else Live(render(progress, recent), console=console, auto_refresh=False)
        try:
            if live is not None:
                live.start()
            for item in stream:
                line = describe(item.event)
                if plain:
                    console.print(Text(line), soft_wrap=True)
                else:
                    recent.append(line)
                    if isinstance(item.event, ProgressEvent):
                        progress = runtime.coordinator.progress()
                    live.update(render(progress, recent), refresh=True)  # type: ignore[union-attr]
                seen += 1
                if limit is not None and seen >= limit:
                    break
        finally:
            stream.close()  # type: ignore[attr-defined]
            if live is not None:
                live.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A live view of a home's runtime (start it with `resident up`).")
    parser.add_argument("--home", help="the home (default: $RESIDENT_HOME, else the user data dir)")
    parser.add_argument("--plain", action="store_true", help="one line per event instead of a live table")
    parser.add_argument("--events", type=int, help="stop after this many events")
    args = parser.parse_args(argv)
    console = Console(highlight=False, markup=False, emoji=False)
    try:
        return run(args.home, plain=args.plain, limit=args.events, console=console)
    except ResidentError as error:
        print(f"error: {type(error).__name__}: {printable(error.message)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
