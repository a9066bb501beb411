"""`resident bench writes --sweep LEVELS --plot FILE.svg`: every kind of writer at every level, from one run, drawn.

Without matplotlib (the `[bench]` extra) a plot is refused in one line naming the extra, before anything runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from resident.benchmarks.sweep import KINDS, SweepPoint, parse_levels, plot
from resident.errors import InvalidInput
from tests.cli_helpers import expect_error, expect_json, invoke


@pytest.mark.slow
def test_a_sweep_measures_every_kind_at_every_level_and_draws_them(tmp_path: Path) -> None:
    drawing = tmp_path / "plots" / "writes.svg"
    document = expect_json(
        invoke(tmp_path / "unused", "bench", "writes", "--sweep", "2", "--duration", "0.2", "--plot", str(drawing),
               "--json")
    )
    points = document["points"]
    assert [(point["kind"], point["concurrency"]) for point in points] == [(kind, 2) for kind in KINDS]
    assert all(point["writes"] > 0 and point["errors"] == 0 for point in points)
    assert all(point["p99_ms"] >= point["p50_ms"] > 0 for point in points)
    assert document["plot"] == str(drawing)
    svg = drawing.read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml")
    assert "remember_many" in svg


def test_without_matplotlib_a_plot_is_refused_before_the_sweep_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    drawing = tmp_path / "writes.svg"
    message = expect_error(
        invoke(tmp_path / "unused", "bench", "writes", "--sweep", "1,8", "--plot", str(drawing)), "PlotUnavailable"
    )
    assert "resident-runtime[bench]" in message
    assert not drawing.exists()
    with pytest.raises(ImportError, match=r"\[bench\]"):
        plot([SweepPoint("threads", 1, 10, 1.0, 1.0, 2.0, 50.0, 0)], drawing)


@pytest.mark.parametrize("levels", ["", "0", "1,x", "8,5000", "-1", "1;8"])
def test_sweep_levels_out_of_range_or_malformed_are_refused(levels: str) -> None:
    with pytest.raises(InvalidInput, match="--sweep"):
        parse_levels(levels)


def test_plot_without_sweep_is_a_usage_error(tmp_path: Path) -> None:
    expect_error(invoke(tmp_path / "unused", "bench", "writes", "--plot", str(tmp_path / "x.svg")), "UsageError",
                 code=2)
    assert parse_levels("64, 1,8,8") == [1, 8, 64]
