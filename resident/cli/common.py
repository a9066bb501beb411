"""What every `resident` subcommand shares: the CLI state, reading arguments and printing.

Light on purpose, like every module of this package at import: the runtime is imported only by the
commands that open it here (see `resident.cli.target`), so that `--help` and the commands a running
`resident up` serves start quickly.

Stored text is printed, never obeyed (see `resident.terminal`): the `stdout` console passes every
string it renders through `printable`, errors and log lines call it directly, and JSON output
escapes the same characters as JSON escapes. The console is made (and rich imported, about 20 ms)
when a command first prints through it, so a command that prints JSON, or a line `click.echo`
writes, never loads rich.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import click

from resident.errors import TextInvalid
from resident.terminal import UNPRINTABLE, printable

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "UTF8",
    "CliState",
    "emit_json",
    "json_option",
    "pass_state",
    "print_table",
    "read_text_argument",
    "stdout",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class CliState:
    """Options of the root group, and whether the running command prints JSON."""

    home: str | None
    json: bool = False


pass_state = click.make_pass_decorator(CliState)


def _printable_console() -> Console:
    """A console that passes every string it renders (printed or in a table cell) through `printable`."""
    from rich.console import Console  # noqa: PLC0415 - see the module docstring
    from rich.text import Text  # noqa: PLC0415 - loaded only when this runs

    class PrintableConsole(Console):
        def render_str(self, text: str, **options: Any) -> Text:
            return super().render_str(printable(text), **options)

    # Memories, ids and paths are user data: rich must print them as they are, so no markup
    # (`[/x]` in a memory is text, not a closing tag) and no emoji codes (`:thumbs_up:` stays text).
    return PrintableConsole(soft_wrap=True, highlight=False, markup=False, emoji=False)


class _Stdout:
    """Standard output as commands print to it: the printable console, made on first use."""

    @cached_property
    def console(self) -> Console:
        """The rich console itself (for progress bars and live views)."""
        return _printable_console()

    def print(self, *objects: Any, **options: Any) -> None:
        """`Console.print`: text wrapped as the terminal does, tables, styles."""
        self.console.print(*objects, **options)

    @staticmethod
    def line(text: str) -> None:
        """One line of plain text, made printable and written as it is (a tab stays a tab).

        For the commands a member session runs all the time (`remember`, `recall`): they need no
        table or style, and not loading rich keeps them quick (bench/cli.py).
        """
        click.echo(printable(text))

    @property
    def width(self) -> int:
        """The console's width, in cells (the terminal's, unless set)."""
        return self.console.width

    @width.setter
    def width(self, cells: int) -> None:
        self.console.width = cells


stdout = _Stdout()


class Utf8Text(click.ParamType[str]):
    """A text argument or option that must be valid UTF-8.

    Python hands undecodable bytes of argv over as lone surrogates; they cannot be stored or sent
    anywhere, so they are refused here, before the runtime is opened, as `TextInvalid`.
    """

    name = "text"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None  # noqa: ARG002 - click's signature
    ) -> str:
        text = str(value)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            what = param.human_readable_name if param is not None else "an argument"
            raise TextInvalid(f"{what} is not valid UTF-8 (character {error.start}); pass UTF-8 text") from None
        return text


UTF8 = Utf8Text()


def json_option(func: F) -> F:
    """Add `--json`; when given, errors are printed as a JSON object too."""

    def remember_choice(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        state = ctx.find_object(CliState)
        if state is not None and value:
            state.json = True
        return value

    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        expose_value=True,
        is_eager=True,
        callback=remember_choice,
        help='Print one JSON object instead of text; errors too, as {"error": {"type", "message"}}.',
    )(func)


def emit_json(value: Any) -> None:
    """Print `value` (structs, lists, dicts) as one JSON document on one line."""
    import msgspec  # noqa: PLC0415 - `resident --help` needs no msgspec; every command does, through its answers

    builtins = msgspec.to_builtins(value)
    text = json.dumps(builtins, ensure_ascii=False)
    if not _is_utf8(text):
        # A path made of undecodable bytes: escaped, the document is still valid JSON and printable.
        text = json.dumps(builtins, ensure_ascii=True)
    # json escapes C0 controls itself; the others it writes raw. Outside strings they cannot occur.
    click.echo(UNPRINTABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", text))


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def print_table(
    columns: Sequence[str], rows: Iterable[Sequence[str]], *, ids: Collection[str] = (), title: str | None = None
) -> None:
    """Print rows as a table whose `ids` columns are never cut or wrapped: the other columns wrap first."""
    from rich.table import Table  # noqa: PLC0415 - see the module docstring

    rows = [list(row) for row in rows]
    table = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        if column in ids:
            widest = max((len(row[index]) for row in rows), default=len(column))
            table.add_column(column, no_wrap=True, min_width=max(widest, len(column)))
        else:
            table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    stdout.print(table)


def read_text_argument(text: str) -> str:
    """The argument itself, or standard input (strict UTF-8) when it is `-`."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TextInvalid(f"standard input is not valid UTF-8 (byte {error.start}); send UTF-8 text") from None
