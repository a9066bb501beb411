"""ISO weeks (`2026-W49`), in UTC: what a weekly report covers."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from resident.errors import InvalidInput

__all__ = ["Week", "parse_week", "week_of"]

_WEEK = re.compile(r"(\d{4})-W(\d{2})")


class Week:
    """One ISO week: Monday 00:00 UTC (`start`, inclusive) to the next Monday (`end`, exclusive)."""

    def __init__(self, year: int, number: int) -> None:
        try:
            monday = date.fromisocalendar(year, number, 1)
        except ValueError:
            raise InvalidInput(
                f"{year}-W{number:02d} is not a week of that year; weeks run from W01 to W52 or W53"
            ) from None
        self.label = f"{year}-W{number:02d}"
        self.start = datetime(monday.year, monday.month, monday.day, tzinfo=UTC).timestamp()
        self.end = (datetime(monday.year, monday.month, monday.day, tzinfo=UTC) + timedelta(days=7)).timestamp()

    def __contains__(self, timestamp: float) -> bool:
        return self.start <= timestamp < self.end

    def __repr__(self) -> str:
        return f"Week({self.label})"


def parse_week(text: str) -> Week:
    """`YYYY-Www` as a `Week` (`InvalidInput` naming the expected shape otherwise)."""
    found = _WEEK.fullmatch(text.strip()) if isinstance(text, str) else None
    if found is None:
        raise InvalidInput(f"a week is written YYYY-Www, like 2026-W49, not {str(text)[:40]!r}")
    return Week(int(found.group(1)), int(found.group(2)))


def week_of(timestamp: float) -> Week:
    """The ISO week (UTC) that holds `timestamp`."""
    year, number, _ = datetime.fromtimestamp(timestamp, tz=UTC).isocalendar()
    return Week(year, number)
